// Random property tests for the oneDNN Graph ops (1-D to 3-D, groups 1/2/3/depthwise, every
// auto_pad mode with and without dilation, NXC/NCX, XIO/OIX, output_shape / filters_shape in
// every accepted form, output_padding), ONNX ConvTranspose and TF Conv3D*V2, against the N-D
// float64 reference. Each test derives the pads with its own copy of the framework's rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "convgrad/onednn.h"
#include "convgrad/onnx.h"
#include "reference_nd.h"
#include "registry_cpu.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

int case_count() {
    const char *env = std::getenv("CONVGRAD_TEST_CASES");
    return env ? std::atoi(env) : 300;
}

int64_t pick(Rng &rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

std::string list(const std::vector<int64_t> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
}

// Random channel structure and per-axis window of one problem (sizes to be finished by each test).
NdConv random_nd(Rng &rng, int rank) {
    NdConv c;
    c.rank = rank;
    c.batch = pick(rng, 1, 2);
    const int kind = static_cast<int>(pick(rng, 0, 3));  // dense, 2 groups, 3 groups, depthwise
    const int64_t cg = kind == 3 ? 1 : pick(rng, 1, 4), kg = pick(rng, 1, 4);
    c.groups = kind == 0 ? 1 : kind == 3 ? pick(rng, 2, 6) : kind + 0;
    c.cin = c.groups * cg;
    c.cout = c.groups * kg;
    for (int a = 0; a < rank; a++) {
        c.kernel.push_back(pick(rng, 1, 3));
        c.stride.push_back(pick(rng, 1, 3));
        c.dilation.push_back(pick(rng, 1, 3));
    }
    return c;
}

int64_t effective(const NdConv &c, int a) { return (c.kernel[a] - 1) * c.dilation[a] + 1; }

// Converts between the reference's layouts and an op's (NXC/NCX, XIO/OIX).
struct Layouts {
    int rank;
    bool nxc, xio;
    std::vector<double> act_to_op(const std::vector<double> &v, const std::vector<int64_t> &ncx_shape) const {
        return nxc ? permute(v, ncx_shape, ncx_to_nxc(rank)) : v;
    }
    std::vector<double> act_from_op(const std::vector<double> &v, const std::vector<int64_t> &ncx_shape) const {
        return nxc ? permute(v, permute_shape(ncx_shape, ncx_to_nxc(rank)), inverse(ncx_to_nxc(rank))) : v;
    }
    std::vector<double> filter_to_op(const std::vector<double> &v, const std::vector<int64_t> &oix_shape) const {
        return xio ? permute(v, oix_shape, oix_to_xio(rank)) : v;
    }
    std::vector<double> filter_from_op(const std::vector<double> &v, const std::vector<int64_t> &oix_shape) const {
        return xio ? permute(v, permute_shape(oix_shape, oix_to_xio(rank)), inverse(oix_to_xio(rank))) : v;
    }
    Shape act_shape(const std::vector<int64_t> &ncx) const { return nxc ? permute_shape(ncx, ncx_to_nxc(rank)) : ncx; }
    Shape filter_shape(const std::vector<int64_t> &oix) const { return xio ? permute_shape(oix, oix_to_xio(rank)) : oix; }
};

// ---------------------------------------------------------------- oneDNN Graph
struct OneDnnCase {
    NdConv ref;
    Layouts layouts;
    onednn::ConvAttrs attrs;
    std::vector<int64_t> pad_end;  // the true pads_end (attrs may carry ignored decoys)
    std::string note;
};

OneDnnCase random_onednn(Rng &rng) {
    while (true) {
        OneDnnCase k;
        const int rank = static_cast<int>(pick(rng, 1, 3));
        k.ref = random_nd(rng, rank);
        k.layouts = {rank, pick(rng, 0, 1) == 1, pick(rng, 0, 1) == 1};
        NdConv &c = k.ref;
        auto &a = k.attrs;
        a.data_format = k.layouts.nxc ? "NXC" : "NCX";
        a.filter_format = k.layouts.xio ? "XIO" : "OIX";
        a.groups = c.groups;
        const std::vector<std::string> modes = {"none", "same_upper", "same_lower", "valid"};
        const std::string mode = modes[pick(rng, 0, 3)];
        a.auto_pad = mode;
        if (pick(rng, 0, 3) == 0) {  // attribute values are case-insensitive
            std::transform(a.auto_pad.begin(), a.auto_pad.end(), a.auto_pad.begin(), ::toupper);
        }
        a.strides = c.stride;
        a.dilations = c.dilation;
        bool ok = true;
        std::vector<int64_t> pe(rank);
        for (int ax = 0; ax < rank; ax++) {
            const int64_t in = pick(rng, 1, rank == 3 ? 6 : 9), ke = effective(c, ax), s = c.stride[ax];
            c.in.push_back(in);
            int64_t pb = 0;
            pe[ax] = 0;
            if (mode == "none") {
                pb = pick(rng, 0, 2), pe[ax] = pick(rng, 0, 2);
            } else if (mode != "valid") {
                const int64_t total = in % s == 0 ? std::max<int64_t>(ke - s, 0) : std::max<int64_t>(ke - in % s, 0);
                pb = mode == "same_upper" ? total / 2 : (total + 1) / 2;
                pe[ax] = total - pb;
            }
            c.pad_begin.push_back(pb);
            const int64_t span = in + pb + pe[ax] - ke;
            c.out.push_back(span < 0 ? 0 : span / s + 1);
            ok = ok && c.out.back() >= 1;
        }
        if (!ok) continue;
        k.pad_end = pe;
        if (mode == "none") {
            a.pads_begin = c.pad_begin;
            a.pads_end = pe;
        } else if (pick(rng, 0, 1)) {  // ignored when auto_pad is set
            a.pads_begin = std::vector<int64_t>(rank, 7);
            a.pads_end = std::vector<int64_t>(rank, 7);
        }
        k.note = "rank " + std::to_string(rank) + " " + a.data_format + " " + a.filter_format + " groups " +
                 std::to_string(c.groups) + " auto_pad " + a.auto_pad + " in " + list(c.in) + " k " + list(c.kernel) +
                 " s " + list(c.stride) + " d " + list(c.dilation) + " pb " + list(c.pad_begin) + " pe " + list(pe);
        return k;
    }
}

TEST(OneDnnGraphRandom, ConvolutionBackpropData) {
    Rng rng(5005);
    std::set<int> forms;
    for (int i = 0; i < case_count(); i++) {
        OneDnnCase k = random_onednn(rng);
        const NdConv &c = k.ref;
        const int rank = c.rank;
        // output_shape: spatial, full, or absent (inferred; output_padding makes up the rest).
        int form = static_cast<int>(pick(rng, 0, 2));
        Shape output_shape;
        const bool same = k.attrs.auto_pad.size() > 4 && std::tolower(k.attrs.auto_pad[0]) == 's';
        if (form == 2) {
            for (int ax = 0; ax < rank && form == 2; ax++) {
                const int64_t natural = same ? c.out[ax] * c.stride[ax]
                                             : c.stride[ax] * (c.out[ax] - 1) + effective(c, ax) - c.pad_begin[ax] -
                                                   k.pad_end[ax];
                const int64_t op = c.in[ax] - natural;
                if (op < 0 || (same && op != 0)) form = 0;
                else if (!same) k.attrs.output_padding.push_back(op);
            }
            if (form != 2) k.attrs.output_padding.clear();
        }
        if (form == 0) output_shape = c.in;
        if (form == 1) output_shape = k.layouts.act_shape(c.x_shape());
        forms.insert(form);
        SCOPED_TRACE("case " + std::to_string(i) + " " + k.note + " output_shape form " + std::to_string(form) +
                     " output_padding " + list(k.attrs.output_padding));
        auto p = onednn::convolution_backprop_data(k.attrs, k.layouts.act_shape(c.dy_shape()),
                                                   k.layouts.filter_shape(c.w_shape()), output_shape, DType::kFloat32);
        ASSERT_TRUE(p.is_ok()) << p.status.message();
        const auto w = random_values(num_elements(c.w_shape()), rng), dy = random_values(num_elements(c.dy_shape()), rng);
        const RunResult r = run_problem(p.value, Direction::kBackwardData, k.layouts.act_to_op(dy, c.dy_shape()),
                                        k.layouts.filter_to_op(w, c.w_shape()), pick(rng, 0, 4) == 0);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        EXPECT_LE(relative_error(k.layouts.act_from_op(r.result, c.x_shape()), nd_backprop_data(c, w, dy)), 1e-5)
            << r.kernel;
    }
    EXPECT_EQ(forms.size(), 3u) << "every output_shape form drawn";
}

TEST(OneDnnGraphRandom, ConvolutionBackpropFilters) {
    Rng rng(6006);
    for (int i = 0; i < case_count(); i++) {
        OneDnnCase k = random_onednn(rng);
        const NdConv &c = k.ref;
        const bool full = pick(rng, 0, 1);
        const Shape filters_shape = full ? k.layouts.filter_shape(c.w_shape()) : Shape(c.kernel);
        SCOPED_TRACE("case " + std::to_string(i) + " " + k.note + (full ? " full" : " spatial") + " filters_shape");
        auto p = onednn::convolution_backprop_filters(k.attrs, k.layouts.act_shape(c.x_shape()),
                                                      k.layouts.act_shape(c.dy_shape()), filters_shape, DType::kFloat32);
        ASSERT_TRUE(p.is_ok()) << p.status.message();
        const auto x = random_values(num_elements(c.x_shape()), rng), dy = random_values(num_elements(c.dy_shape()), rng);
        const RunResult r = run_problem(p.value, Direction::kBackwardWeights, k.layouts.act_to_op(x, c.x_shape()),
                                        k.layouts.act_to_op(dy, c.dy_shape()), pick(rng, 0, 4) == 0);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        EXPECT_LE(relative_error(k.layouts.filter_from_op(r.result, c.w_shape()), nd_backprop_filter(c, x, dy)), 1e-5)
            << r.kernel;
    }
}

// ---------------------------------------------------------------- ONNX ConvTranspose
TEST(OnnxRandom, ConvTranspose) {
    Rng rng(7007);
    std::set<std::string> modes_seen;
    for (int i = 0; i < case_count(); i++) {
        const int rank = static_cast<int>(pick(rng, 1, 3));
        NdConv c = random_nd(rng, rank);  // the forward convolution; ConvTranspose's X is its dy
        onnx::ConvTransposeAttrs a;
        const std::vector<std::string> modes = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
        a.auto_pad = modes[pick(rng, 0, 3)];
        a.group = c.groups;
        a.strides = c.stride;
        a.dilations = c.dilation;
        if (pick(rng, 0, 1)) a.kernel_shape = c.kernel;
        const bool give_shape = pick(rng, 0, 2) == 0, give_pads = a.auto_pad == "NOTSET" && pick(rng, 0, 1);
        std::vector<int64_t> pb(rank), pe(rank);
        bool ok = true;
        c.in.clear();
        c.pad_begin.clear();
        for (int ax = 0; ax < rank; ax++) {
            const int64_t x = pick(rng, 1, rank == 3 ? 5 : 7), s = c.stride[ax], d = c.dilation[ax];
            const int64_t op = pick(rng, 0, std::max(s, d) - 1);
            a.output_padding.push_back(op);
            pb[ax] = give_pads ? pick(rng, 0, 2) : 0, pe[ax] = give_pads ? pick(rng, 0, 2) : 0;
            const int64_t natural = s * (x - 1) + op + effective(c, ax);
            int64_t out = -1;
            if (give_shape) out = std::max<int64_t>(1, natural - pb[ax] - pe[ax] + pick(rng, -1, 1));
            else if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") out = x * s;
            int64_t in, begin;
            if (out >= 0) {  // ONNX: total padding split, floor division
                const int64_t total = natural - out;
                begin = a.auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
                in = out;
                if (give_shape) a.output_shape.push_back(out);
            } else {
                begin = pb[ax];
                in = natural - pb[ax] - pe[ax];
            }
            c.out.push_back(x);
            c.in.push_back(in);
            c.pad_begin.push_back(begin);
            ok = ok && in >= 1;
        }
        if (!ok) {
            i--;
            continue;
        }
        if (give_pads) {
            a.pads = pb;
            a.pads.insert(a.pads.end(), pe.begin(), pe.end());
        }
        modes_seen.insert(a.auto_pad + (give_shape ? "+shape" : ""));
        SCOPED_TRACE("case " + std::to_string(i) + " rank " + std::to_string(rank) + " auto_pad " + a.auto_pad +
                     " group " + std::to_string(a.group) + " X " + list(c.dy_shape()) + " W " + list(c.w_shape()) +
                     " strides " + list(a.strides) + " dilations " + list(a.dilations) + " pads " + list(a.pads) +
                     " output_padding " + list(a.output_padding) + " output_shape " + list(a.output_shape));
        auto p = onnx::conv_transpose(a, c.dy_shape(), c.w_shape(), DType::kFloat32);
        ASSERT_TRUE(p.is_ok()) << p.status.message();
        ASSERT_EQ(input_shape(p.value), c.x_shape());
        const auto w = random_values(num_elements(c.w_shape()), rng), x = random_values(num_elements(c.dy_shape()), rng);
        const RunResult r = run_problem(p.value, Direction::kBackwardData, x, w, pick(rng, 0, 4) == 0);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        EXPECT_LE(relative_error(r.result, nd_backprop_data(c, w, x)), 1e-5) << r.kernel;
    }
    EXPECT_GE(modes_seen.size(), 6u);
}

// 3-D data gradients on the row-tile kernels (ncx_px: x vectors along NCDHW rows; nxc_px:
// few channels per group), over several blocks of staged dy rows (a short last block) and
// several planes: each block is staged once for every plane and group, and a wrong plane or
// row offset in the staging shows up here (random cases are too small to reach these kernels).
// Also the channel-slab kernel ncx_cs (40 dy channels over 3x3 rows of taps: more lines than
// ncx_px takes), whose tiles write dx per block of one plane's rows: 3 planes of 11 rows.
TEST(OneDnnGraphFixed, RowTileKernels3D) {
    Rng rng(9009);
    struct Case {
        bool nxc;
        int64_t groups, cin, cout;
        const char *kernel;
        std::vector<int64_t> in = {4, 19, 32};  // (ncx_cs: a smaller volume keeps the reference quick)
    };
    for (const Case &k : {Case{false, 1, 8, 8, "bwd_data_f32_ncx_px"}, Case{false, 2, 6, 4, "bwd_data_f32_ncx_px"},
                          Case{true, 1, 3, 5, "bwd_data_f32_nxc_px"}, Case{true, 4, 16, 8, "bwd_data_f32_nxc_px"},
                          Case{false, 1, 32, 40, "bwd_data_f32_ncx_cs", {3, 11, 32}}}) {
        NdConv c;
        c.rank = 3, c.batch = 2, c.groups = k.groups, c.cin = k.cin, c.cout = k.cout;
        c.in = k.in, c.out = c.in, c.kernel = {3, 3, 3}, c.stride = {1, 1, 1}, c.dilation = {1, 1, 1};
        c.pad_begin = {1, 1, 1};
        const Layouts l{3, k.nxc, false};
        onednn::ConvAttrs a;
        a.data_format = k.nxc ? "NXC" : "NCX", a.filter_format = "OIX", a.groups = c.groups;
        a.strides = c.stride, a.dilations = c.dilation, a.pads_begin = c.pad_begin, a.pads_end = c.pad_begin;
        SCOPED_TRACE(std::string(a.data_format) + " groups " + std::to_string(c.groups) + " cin " + std::to_string(c.cin));
        auto p = onednn::convolution_backprop_data(a, l.act_shape(c.dy_shape()), l.filter_shape(c.w_shape()), c.in,
                                                   DType::kFloat32);
        ASSERT_TRUE(p.is_ok()) << p.status.message();
        const auto w = random_values(num_elements(c.w_shape()), rng), dy = random_values(num_elements(c.dy_shape()), rng);
        const RunResult r = run_problem(p.value, Direction::kBackwardData, l.act_to_op(dy, c.dy_shape()),
                                        l.filter_to_op(w, c.w_shape()), false);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        EXPECT_EQ(r.kernel, kernel_on_this_path(k.kernel));
        EXPECT_LE(relative_error(l.act_from_op(r.result, c.x_shape()), nd_backprop_data(c, w, dy)), 1e-5);
    }
}

// The Winograd kernels on 3-D layers (nxc_wg, ncx_wg: each depth slice's 3x3 taps by
// F(4x4, 3x3), the depth taps directly; the data gradient transforms each slice of dy once per
// block, the filter gradient x's tiles once per depth tap), both gradients: slices that are not
// whole 4x4 tiles, VALID, 1 and 4 depth taps, uneven pads, 2 groups, and dilations along the
// slices (the dilation phases' 3-D views, 8x8 slices). Not taken: 5 depth taps (the data
// gradient keeps 4 slices of dy's tiles: kWinogradMaxDepthTaps), a depth stride of 2, 40 dy
// channels, and for the filter gradient dy's 5x10 slices (tiles of 8x12: 1.9x the work;
// kernel_registry.h: kWinogradMaxOvercompute). (Under the Winograd bounds of CPUs other than
// the Zen 5, on any host, so that every host runs these Winograd kernels.)
TEST(OneDnnGraphFixed, WinogradGradients3D) {
    const ScopedRegistryCpu other(RegistryCpu::kOther);
    Rng rng(9119);
    struct Case {
        bool nxc;
        int64_t groups, cin, cout;
        std::vector<int64_t> in, kernel, pad_begin, out, stride, dilation;
        const char *data_kernel, *filter_kernel;
    };
    const std::vector<int64_t> ones = {1, 1, 1}, slice_dilation = {1, 2, 2};
    // (Batch 1 and a few slices: the float64 reference takes most of the time, under qemu too.)
    const std::vector<Case> cases = {
        {true, 1, 32, 32, {3, 10, 11}, {3, 3, 3}, {1, 1, 1}, {3, 10, 11}, ones, ones, "nxc_wg", "nxc_wg"},
        {false, 1, 32, 64, {3, 10, 11}, {3, 3, 3}, {1, 1, 1}, {3, 10, 11}, ones, ones, "ncx_wg", "ncx_wg"},
        {true, 1, 64, 32, {4, 7, 12}, {3, 3, 3}, {0, 0, 0}, {2, 5, 10}, ones, ones, "nxc_wg", "nxc"},
        {true, 1, 32, 32, {4, 14, 14}, {3, 3, 3}, {0, 0, 0}, {2, 12, 12}, ones, ones, "nxc_wg", "nxc_wg"},
        {false, 1, 32, 32, {3, 8, 9}, {1, 3, 3}, {0, 2, 0}, {3, 8, 8}, ones, ones, "ncx_wg", "ncx_wg"},
        {true, 1, 32, 32, {5, 8, 8}, {4, 3, 3}, {2, 1, 1}, {4, 8, 8}, ones, ones, "nxc_wg", "nxc_wg"},
        {true, 1, 32, 32, {5, 8, 8}, {5, 3, 3}, {2, 1, 1}, {4, 8, 8}, ones, ones, "nxc_cs", "nxc"},
        {true, 2, 64, 64, {2, 12, 12}, {3, 3, 3}, {1, 1, 1}, {2, 12, 12}, ones, ones, "nxc_wg", "nxc_wg"},
        // (8x8 slices are 8 tiles: 110 KB of the transformed filter a tile, kernel_registry.h.)
        {true, 2, 64, 64, {2, 8, 8}, {3, 3, 3}, {1, 1, 1}, {2, 8, 8}, ones, ones, "nxc_cs", "nxc_wg"},
        {true, 1, 32, 32, {2, 13, 13}, {3, 3, 3}, {1, 2, 2}, {2, 13, 13}, ones, slice_dilation, "nxc_wg", "nxc_wg"},
        // (NCX: the 6x6-slice phases are too small for whole tiles, and NCX's direct kernels
        // take contiguous pixels only: no phases, the dilated call; the filter gradient's NCX
        // phases gather, so it is never phased.)
        {false, 1, 32, 32, {2, 13, 13}, {3, 3, 3}, {1, 2, 2}, {2, 13, 13}, ones, slice_dilation, "ncx_cs", "ncx"},
        {false, 1, 32, 32, {2, 16, 16}, {3, 3, 3}, {1, 2, 2}, {2, 16, 16}, ones, slice_dilation, "ncx_wg", "ncx"},
        {true, 1, 32, 32, {5, 8, 8}, {3, 3, 3}, {1, 1, 1}, {3, 8, 8}, {2, 1, 1}, ones, "nxc_cs", "nxc"},
        {true, 1, 32, 40, {2, 8, 8}, {3, 3, 3}, {1, 1, 1}, {2, 8, 8}, ones, ones, "nxc_cs", "nxc"}};
    for (const Case &k : cases) {
        NdConv c;
        c.rank = 3, c.batch = 1, c.groups = k.groups, c.cin = k.cin, c.cout = k.cout;
        c.in = k.in, c.out = k.out, c.kernel = k.kernel, c.stride = k.stride, c.dilation = k.dilation;
        c.pad_begin = k.pad_begin;
        std::vector<int64_t> pads_end(3);
        for (int a = 0; a < 3; a++) {
            pads_end[a] = (c.out[a] - 1) * c.stride[a] + effective(c, a) - c.in[a] - c.pad_begin[a];
        }
        const Layouts l{3, k.nxc, false};
        onednn::ConvAttrs a;
        a.data_format = k.nxc ? "NXC" : "NCX", a.filter_format = "OIX", a.groups = c.groups;
        a.strides = c.stride, a.dilations = c.dilation, a.pads_begin = c.pad_begin, a.pads_end = pads_end;
        SCOPED_TRACE(std::string(a.data_format) + " in " + std::to_string(c.in[0]) + "x" + std::to_string(c.in[1]) + "x" +
                     std::to_string(c.in[2]) + " depth taps " + std::to_string(c.kernel[0]) + " expecting " + k.data_kernel +
                     ", " + k.filter_kernel);
        const auto w = random_values(num_elements(c.w_shape()), rng), dy = random_values(num_elements(c.dy_shape()), rng),
                   x = random_values(num_elements(c.x_shape()), rng);
        auto pd = onednn::convolution_backprop_data(a, l.act_shape(c.dy_shape()), l.filter_shape(c.w_shape()), c.in,
                                                    DType::kFloat32);
        ASSERT_TRUE(pd.is_ok()) << pd.status.message();
        const RunResult rd = run_problem(pd.value, Direction::kBackwardData, l.act_to_op(dy, c.dy_shape()),
                                         l.filter_to_op(w, c.w_shape()), false);
        ASSERT_TRUE(rd.status.is_ok()) << rd.status.message();
        EXPECT_EQ(rd.kernel, kernel_on_this_path(std::string("bwd_data_f32_") + k.data_kernel));
        EXPECT_LE(relative_error(l.act_from_op(rd.result, c.x_shape()), nd_backprop_data(c, w, dy)), 1e-5);
        auto pw = onednn::convolution_backprop_filters(a, l.act_shape(c.x_shape()), l.act_shape(c.dy_shape()),
                                                       l.filter_shape(c.w_shape()), DType::kFloat32);
        ASSERT_TRUE(pw.is_ok()) << pw.status.message();
        const RunResult rw = run_problem(pw.value, Direction::kBackwardWeights, l.act_to_op(x, c.x_shape()),
                                         l.act_to_op(dy, c.dy_shape()), false);
        ASSERT_TRUE(rw.status.is_ok()) << rw.status.message();
        EXPECT_EQ(rw.kernel, kernel_on_this_path(std::string("bwd_weights_f32_") + k.filter_kernel));
        EXPECT_LE(relative_error(l.filter_from_op(rw.result, c.w_shape()), nd_backprop_filter(c, x, dy)), 1e-5);
    }
}

// ---------------------------------------------------------------- TF Conv3D*V2
TEST(TfRandom, Conv3DBackpropInputV2AndFilterV2) {
    Rng rng(8008);
    for (int i = 0; i < case_count() / 2; i++) {
        NdConv c = random_nd(rng, 3);
        c.groups = 1, c.cin = pick(rng, 1, 4), c.cout = pick(rng, 1, 4);  // TF Conv3D is ungrouped
        const Layouts l{3, pick(rng, 0, 1) == 1, true};
        const bool same = pick(rng, 0, 1);
        bool ok = true;
        c.in.clear(), c.out.clear(), c.pad_begin.clear();
        for (int ax = 0; ax < 3; ax++) {
            const int64_t in = pick(rng, 1, 6), ke = effective(c, ax), s = c.stride[ax];
            const int64_t out = same ? (in + s - 1) / s : (in - ke + s) / s;
            c.in.push_back(in);
            c.out.push_back(out);
            c.pad_begin.push_back(same ? std::max<int64_t>(0, (out - 1) * s + ke - in) / 2 : 0);
            ok = ok && out >= 1;
        }
        if (!ok) {
            i--;
            continue;
        }
        tf::ConvAttrs attrs;
        attrs.padding = same ? "SAME" : "VALID";
        attrs.data_format = l.nxc ? "NDHWC" : "NCDHW";
        const auto five = [&](const std::vector<int64_t> &v) {
            return l.nxc ? std::vector<int64_t>{1, v[0], v[1], v[2], 1} : std::vector<int64_t>{1, 1, v[0], v[1], v[2]};
        };
        attrs.strides = five(c.stride);
        attrs.dilations = five(c.dilation);
        SCOPED_TRACE("case " + std::to_string(i) + " " + attrs.data_format + " " + attrs.padding + " in " + list(c.in) +
                     " k " + list(c.kernel) + " s " + list(c.stride) + " d " + list(c.dilation));
        const Shape x_shape = l.act_shape(c.x_shape()), w_shape = l.filter_shape(c.w_shape()),
                    dy_shape = l.act_shape(c.dy_shape());
        const auto x = random_values(num_elements(x_shape), rng), w = random_values(num_elements(w_shape), rng),
                   dy = random_values(num_elements(dy_shape), rng);
        auto pd = tf::conv3d_backprop_input_v2(attrs, x_shape, w_shape, dy_shape, DType::kFloat32);
        ASSERT_TRUE(pd.is_ok()) << pd.status.message();
        const RunResult rd = run_problem(pd.value, Direction::kBackwardData, l.act_to_op(dy, c.dy_shape()),
                                         l.filter_to_op(w, c.w_shape()), false);
        ASSERT_TRUE(rd.status.is_ok()) << rd.status.message();
        EXPECT_LE(relative_error(l.act_from_op(rd.result, c.x_shape()), nd_backprop_data(c, w, dy)), 1e-5);
        auto pw = tf::conv3d_backprop_filter_v2(attrs, x_shape, w_shape, dy_shape, DType::kFloat32);
        ASSERT_TRUE(pw.is_ok()) << pw.status.message();
        const RunResult rw = run_problem(pw.value, Direction::kBackwardWeights, l.act_to_op(x, c.x_shape()),
                                         l.act_to_op(dy, c.dy_shape()), false);
        ASSERT_TRUE(rw.status.is_ok()) << rw.status.message();
        EXPECT_LE(relative_error(l.filter_from_op(rw.result, c.w_shape()), nd_backprop_filter(c, x, dy)), 1e-5);
    }
}

}  // namespace
}  // namespace convgrad::test
