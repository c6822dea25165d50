// The Halide runtime's own checks must surface as a Status, never abort(): call a kernel
// directly (bypassing the registry's predicate) with views or sizes it asserts against.
#include <gtest/gtest.h>
#include <utility>

#include "halide_bridge.h"
#include "kernel_registry.h"
#include "shape_inference.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

// The table's kernel `name`, or nullptr.
const KernelEntry *find_kernel(const std::string &name) {
    for (const KernelEntry &k : kernel_table()) {
        if (k.name == name) return &k;
    }
    return nullptr;
}

// Runs the data-gradient kernel `name` directly, bypassing the registry, on random dy and w
// for `p` (dy and dx gapped, c stride 2, or dense), after checking that the registry would
// not choose it for these views; then the registry's own choice must succeed on them.
// Returns the direct call's status.
Status run_directly(const ConvProblem &p, bool gapped, const std::string &name) {
    HostTensor dy(output_shape(p), gapped), w(filter_shape(p), false), dx(input_shape(p), gapped);
    Rng rng(4);
    dy.fill(random_values(dy.tensor.num_elements(), rng));
    w.fill(random_values(w.tensor.num_elements(), rng));
    auto vdy = make_view(p, TensorRole::kOutput, dy.tensor, "dy", false);
    auto vw = make_view(p, TensorRole::kFilter, w.tensor, "w", false);
    auto vdx = make_view(p, TensorRole::kInput, dx.tensor, "dx", true);
    if (!vdy.is_ok() || !vw.is_ok() || !vdx.is_ok()) return Status::internal("test: views");
    const KernelEntry *kernel = find_kernel(name);
    if (kernel == nullptr) return Status::internal("test: no kernel " + name);
    EXPECT_FALSE(kernel->accepts(Direction::kBackwardData, p, vdy.value, vdx.value, Placement{})) << name;
    Status s = run_kernel(*kernel, p, vdy.value, vw.value, vdx.value);
    EXPECT_TRUE(backward_data(p, dy.tensor, w.tensor, dx.tensor).is_ok()) << "the registry's kernel";
    return s;
}

// Runs the filter-gradient kernel `name` directly, bypassing the registry (after checking
// that the registry would not choose it), on x and dy into dw (all dense; dw poisoned first).
Status run_filter_directly(const ConvProblem &p, HostTensor &x, HostTensor &dy, HostTensor &dw, const std::string &name) {
    dw.poison();
    const auto vx = make_view(p, TensorRole::kInput, x.tensor, "x", false);
    const auto vdy = make_view(p, TensorRole::kOutput, dy.tensor, "dy", false);
    const auto vdw = make_view(p, TensorRole::kFilter, dw.tensor, "dw", true);
    if (!vx.is_ok() || !vdy.is_ok() || !vdw.is_ok()) return Status::internal("test: views");
    const KernelEntry *kernel = find_kernel(name);
    if (kernel == nullptr) return Status::internal("test: no kernel " + name);
    EXPECT_FALSE(kernel->accepts(Direction::kBackwardWeights, p, vx.value, vdy.value, Placement{})) << name;
    return run_kernel(*kernel, p, vx.value, vdy.value, vdw.value);
}

// Some refinements hold no SSE4.1 body (the table's from_avx2, generators/CMakeLists.txt):
// on that path (a CPU without AVX2, or CONVGRAD_MAX_CPU_ISA=sse41) a direct call of one must
// be refused with a status that says so, never run AVX2 code. True there, once `s` is
// checked to be that.
bool refused_for_want_of_a_body(const Status &s, const std::string &name) {
    const KernelEntry *k = find_kernel(name);
    if (k == nullptr || !k->from_avx2 || cpu_takes_avx2()) return false;
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.message();
    EXPECT_NE(s.message().find("no SSE4.1 body"), std::string::npos) << s.message();
    return true;
}

// A 3x3 layer with pads of 1 on a width x height plane: what the refusal tests below run.
ConvProblem padded_3x3(int groups, int in_channels, int out_channels, int width, int height) {
    ConvProblem p;
    p.groups = groups;
    p.in_channels = in_channels;
    p.out_channels = out_channels;
    p.input_size = p.output_size = {width, height, 1};
    p.kernel_size = {3, 3, 1};
    p.pads_begin = p.pads_end = {1, 1, 0};
    return p;
}

// `p` with a kh x kw filter, padded so that its planes keep their size.
ConvProblem with_filter(ConvProblem p, int kh, int kw) {
    p.kernel_size = {kh, kw, 1};
    p.pads_begin = p.pads_end = {(kh - 1) / 2, (kw - 1) / 2, 0};
    return p;
}

// `p`'s output sizes, as its input, filter, strides, dilations and pads imply them.
ConvProblem with_output_inferred(ConvProblem p) {
    for (int a = 0; a < 2; ++a) {
        p.output_size[a] = shape::canonical_output_size(p.input_size[a], p.kernel_size[a], p.strides[a],
                                                        p.dilations[a], p.pads_begin[a], p.pads_end[a]);
    }
    return p;
}

// `p` with strides sx along x and sy along y.
ConvProblem strided(ConvProblem p, int sx, int sy) {
    p.strides = {sx, sy, 1};
    return with_output_inferred(p);
}

// `p` (a 3x3 filter) with dilation 2, padded so that its planes keep their size.
ConvProblem dilated_by_2(ConvProblem p) {
    p.dilations = {2, 2, 1};
    p.pads_begin = p.pads_end = {2, 2, 0};
    return p;
}

// `p` in NCHW activations and OIHW filters.
ConvProblem channels_first(ConvProblem p) {
    p.activation_layout = ActivationLayout::kNCX;
    p.filter_layout = FilterLayout::kOIX;
    return p;
}

// The kernel `name`, called directly on `p`, fails with an error status that names it.
void expect_refused(const ConvProblem &p, bool gapped, const std::string &name) {
    const Status s = run_directly(p, gapped, name);
    if (refused_for_want_of_a_body(s, name)) return;
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
}

// A view that breaks the kernel's stride assertion (the registry routes it to the
// stride-agnostic kernel).
TEST(HalideErrors, KernelAssertionBecomesStatus) {
    ConvProblem p;
    p.in_channels = p.out_channels = 4;
    p.input_size = p.output_size = {3, 3, 1};
    const Status s = run_directly(p, true, "bwd_data_f32_nxc");
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("bwd_data_f32_nxc"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("stride"), std::string::npos) << "Halide's message is kept: " << s.message();
}

// The small-group kernel stages dy with kSmallGroupChannels slots per pixel: given wider
// groups (which the registry routes to nxc), it fails with a status instead of writing past
// its staging buffer.
TEST(HalideErrors, SmallGroupKernelRefusesWiderGroups) {
    expect_refused(padded_3x3(2, 16, 2 * (kSmallGroupChannels + 1), 5, 5), false, "bwd_data_f32_nxc_sg");
}

#if defined(__x86_64__)
// On x86 the small-group kernel's tiles hold pairs of groups: given an odd number (which the
// registry routes to nxc), it fails with a status instead of reading a group past dy's last.
// (ARM64 builds run nxc's tiles under that name, and take odd counts.)
TEST(HalideErrors, SmallGroupKernelRefusesOddGroupCounts) {
    expect_refused(padded_3x3(3, 3 * 8, 3 * 8, 9, 5), false, "bwd_data_f32_nxc_sg");
}
#endif

// The channel-slab kernel's tiles are whole slabs of kChannelSlab dx channels: given 48
// (which the registry routes to nxc), it fails with a status instead of reading a tile
// that straddles two slabs.
TEST(HalideErrors, ChannelSlabKernelRefusesPartialSlabs) {
    expect_refused(padded_3x3(1, kChannelSlab + kChannelSlab / 2, 8, 7, 7), true, "bwd_data_f32_nxc_cs");
}

// The Winograd kernels (nxc_wg, ncx_wg) compute 3x3 layers with unit strides and dilations
// only: given stride 2 (either layout), dilation 2 or a 5x5 filter (which the registry
// routes elsewhere), they fail with a status instead of computing another layer's gradient.
TEST(HalideErrors, WinogradKernelRefusesOtherLayers) {
    const ConvProblem layer = padded_3x3(1, 32, 32, 8, 8);
    expect_refused(strided(layer, 2, 2), false, "bwd_data_f32_nxc_wg");
    expect_refused(channels_first(strided(layer, 2, 2)), false, "bwd_data_f32_ncx_wg");
    expect_refused(dilated_by_2(layer), false, "bwd_data_f32_nxc_wg");
    expect_refused(with_filter(padded_3x3(1, 32, 32, 8, 8), 5, 5), false, "bwd_data_f32_nxc_wg");
}

// The Winograd filter gradients (nxc_wg, ncx_wg) likewise: given stride 2 (which the
// registry routes to nxc and ncx), they fail with a status that names them instead of
// computing another layer's taps.
TEST(HalideErrors, WinogradFilterKernelRefusesStrides) {
    for (const bool nchw : {false, true}) {
        const ConvProblem nhwc = strided(padded_3x3(1, 32, 32, 8, 8), 2, 2);
        const ConvProblem p = nchw ? channels_first(nhwc) : nhwc;
        ASSERT_TRUE(validate(p).is_ok());
        HostTensor x(input_shape(p), false), dy(output_shape(p), false), dw(filter_shape(p), false);
        Rng rng(6);
        x.fill(random_values(x.tensor.num_elements(), rng));
        dy.fill(random_values(dy.tensor.num_elements(), rng));
        const std::string name = nchw ? "bwd_weights_f32_ncx_wg" : "bwd_weights_f32_nxc_wg";
        const Status s = run_filter_directly(p, x, dy, dw, name);
        EXPECT_EQ(s.code(), StatusCode::kInternal);
        EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
    }
}

// The dy-broadcast kernel (ncx_db) is a whole kernel, not only the registry's pointwise
// case (the JIT and `convgrad aot` build it for any problem): run directly on a strided,
// padded 3x3 NCHW problem with fewer dy channels than x ones, which the registry sends to
// ncx, it matches the registry's kernel.
TEST(HalideErrors, DyBroadcastKernelOutsideItsRule) {
    ConvProblem p = channels_first(strided(padded_3x3(1, 40, 12, 9, 11), 2, 2));
    p.batch = 2;
    ASSERT_TRUE(validate(p).is_ok());
    HostTensor x(input_shape(p), false), dy(output_shape(p), false), direct(filter_shape(p), false),
        registry(filter_shape(p), false);
    Rng rng(5);
    x.fill(random_values(x.tensor.num_elements(), rng));
    dy.fill(random_values(dy.tensor.num_elements(), rng));
    const Status s = run_filter_directly(p, x, dy, direct, "bwd_weights_f32_ncx_db");
    ASSERT_TRUE(s.is_ok()) << s.message();
    ASSERT_TRUE(backward_weights(p, x.tensor, dy.tensor, registry.tensor).is_ok());
    EXPECT_LE(relative_error(direct.values(), registry.values()), 1e-6);
}

// The flat-plane kernel reads each plane as one row: given rows with gaps between them
// (which the registry routes elsewhere), it fails with a status instead of reading the
// plane with the wrong row width.
TEST(HalideErrors, FlatPlaneKernelRefusesGappedRows) {
    expect_refused(channels_first(padded_3x3(4, 4, 4, 9, 9)), true, "bwd_data_f32_ncg_fp");
}

// The in-place depthwise data gradient (nxg_ip) is compiled for 3x3 filters alone: given a
// 5x5 or a 3x1 one (which the registry routes to nxg), it fails with a status that names it
// instead of reading the filter past its bounds.
TEST(HalideErrors, InPlaceKernelRefusesOtherFilters) {
    for (const auto &[kh, kw] : {std::pair{5, 5}, std::pair{1, 3}}) {
        expect_refused(with_filter(padded_3x3(32, 32, 32, 9, 9), kh, kw), false, "bwd_data_f32_nxg_ip");
    }
}

// The flat-plane filter gradient (ncg_fp) reads each image's dense planes as one row: given
// stride 2, dy narrower than x (VALID) or 2 groups (which the registry routes to ncg), it
// fails with a status that names it instead of reading other positions.
TEST(HalideErrors, FlatPlaneFilterKernelRefusesOtherLayers) {
    const auto depthwise = [](int groups) {
        ConvProblem p = channels_first(padded_3x3(groups, groups, groups, 7, 7));
        p.batch = 4;
        return p;
    };
    ConvProblem valid = depthwise(8);
    valid.pads_begin = valid.pads_end = {0, 0, 0};
    for (const ConvProblem &p : {strided(depthwise(8), 2, 2), with_output_inferred(valid), depthwise(2)}) {
        ASSERT_TRUE(validate(p).is_ok());
        HostTensor x(input_shape(p), false), dy(output_shape(p), false), dw(filter_shape(p), false);
        Rng rng(8);
        x.fill(random_values(x.tensor.num_elements(), rng));
        dy.fill(random_values(dy.tensor.num_elements(), rng));
        const Status s = run_filter_directly(p, x, dy, dw, "bwd_weights_f32_ncg_fp");
        EXPECT_EQ(s.code(), StatusCode::kInternal);
        EXPECT_NE(s.message().find("bwd_weights_f32_ncg_fp"), std::string::npos) << s.message();
    }
}

// The data gradients the registry gives unit strides alone (BwdDataStages::
// unit_strides_only: nxc_px, ncx_px, the pointwise nxc_pw and ncx_px_pw, the in-place
// nxg_ip, which takes unit dilations alone too) compile those taps alone: given stride 2
// or dilation 2 (which the registry routes elsewhere), they fail with a status that names
// them instead of running taps they were not built for.
TEST(HalideErrors, UnitStrideKernelsRefuseOtherStrides) {
    expect_refused(strided(padded_3x3(1, 3, 16, 32, 8), 2, 2), false, "bwd_data_f32_nxc_px");
    expect_refused(channels_first(strided(padded_3x3(1, 8, 8, 32, 8), 1, 2)), false, "bwd_data_f32_ncx_px");
    const ConvProblem pointwise = strided(with_filter(padded_3x3(1, 64, 64, 32, 8), 1, 1), 2, 2);
    expect_refused(pointwise, false, "bwd_data_f32_nxc_pw");
    expect_refused(channels_first(pointwise), false, "bwd_data_f32_ncx_px_pw");
    const ConvProblem depthwise = padded_3x3(32, 32, 32, 9, 9);
    expect_refused(strided(depthwise, 1, 2), false, "bwd_data_f32_nxg_ip");
    expect_refused(dilated_by_2(depthwise), false, "bwd_data_f32_nxg_ip");
}


// The whole-reduction filter gradient (nxc_wr) is a whole kernel too: run directly on layers
// the registry sends to nxc (more dy positions than kWholeReductionMaxPositions; an OIX
// filter, whose co its tiles store scattered), it matches the registry's kernel. Given fewer
// dy channels than its tile spans on any path (7: 32 on AVX-512, 16 on AVX2, 8 on ARM64), it
// fails with a status that names it instead of reading past dy.
TEST(HalideErrors, WholeReductionKernelOutsideItsRule) {
    const std::string name = "bwd_weights_f32_nxc_wr";
    ConvProblem oix = padded_3x3(1, 16, 32, 7, 7);
    oix.filter_layout = FilterLayout::kOIX;
    for (const ConvProblem &p : {padded_3x3(1, 16, 32, 24, 24), oix}) {
        ASSERT_TRUE(validate(p).is_ok());
        HostTensor x(input_shape(p), false), dy(output_shape(p), false), direct(filter_shape(p), false),
            registry(filter_shape(p), false);
        Rng rng(9);
        x.fill(random_values(x.tensor.num_elements(), rng));
        dy.fill(random_values(dy.tensor.num_elements(), rng));
        const Status s = run_filter_directly(p, x, dy, direct, name);
        if (refused_for_want_of_a_body(s, name)) continue;
        ASSERT_TRUE(s.is_ok()) << s.message();
        ASSERT_TRUE(backward_weights(p, x.tensor, dy.tensor, registry.tensor).is_ok());
        EXPECT_LE(relative_error(direct.values(), registry.values()), 1e-5);
    }
    const ConvProblem narrow = padded_3x3(1, 16, 7, 7, 7);
    ASSERT_TRUE(validate(narrow).is_ok());
    HostTensor x(input_shape(narrow), false), dy(output_shape(narrow), false), dw(filter_shape(narrow), false);
    Rng rng(10);
    x.fill(random_values(x.tensor.num_elements(), rng));
    dy.fill(random_values(dy.tensor.num_elements(), rng));
    const Status s = run_filter_directly(narrow, x, dy, dw, name);
    if (refused_for_want_of_a_body(s, name)) return;
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
}

}  // namespace
}  // namespace convgrad::test
