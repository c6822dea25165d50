// The same convolution through different frontends must resolve to the same canonical
// problem and give identical results (same canonical views, same kernel: bit for bit).
#include <gtest/gtest.h>

#include <cstring>

#include "convgrad/onednn.h"
#include "convgrad/onnx.h"
#include "reference_nd.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

int64_t pick(Rng &rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

void expect_same_problem(const ConvProblem &a, const ConvProblem &b) {
    EXPECT_EQ(a.spatial_rank, b.spatial_rank);
    EXPECT_EQ(a.batch, b.batch);
    EXPECT_EQ(a.groups, b.groups);
    EXPECT_EQ(a.in_channels, b.in_channels);
    EXPECT_EQ(a.out_channels, b.out_channels);
    EXPECT_EQ(a.activation_layout, b.activation_layout);
    for (int i = 0; i < a.spatial_rank; i++) {
        EXPECT_EQ(a.input_size[i], b.input_size[i]);
        EXPECT_EQ(a.output_size[i], b.output_size[i]);
        EXPECT_EQ(a.kernel_size[i], b.kernel_size[i]);
        EXPECT_EQ(a.strides[i], b.strides[i]);
        EXPECT_EQ(a.dilations[i], b.dilations[i]);
        EXPECT_EQ(a.pads_begin[i], b.pads_begin[i]);
    }
}

// Both problems run on the same tensor values (already in their shared layout).
void expect_identical(Direction d, const ConvProblem &a, const ConvProblem &b, const std::vector<double> &first,
                      const std::vector<double> &second) {
    expect_same_problem(a, b);
    const RunResult ra = run_problem(a, d, first, second, false), rb = run_problem(b, d, first, second, false);
    ASSERT_TRUE(ra.status.is_ok()) << ra.status.message();
    ASSERT_TRUE(rb.status.is_ok()) << rb.status.message();
    ASSERT_EQ(ra.result.size(), rb.result.size());
    EXPECT_EQ(0, std::memcmp(ra.result.data(), rb.result.data(), ra.result.size() * sizeof(double)))
        << "results differ (" << ra.kernel << " vs " << rb.kernel << ")";
}

struct Window2D {
    int64_t n, cin, cout, h, w, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr;
};

Window2D random_window(Rng &rng) {
    while (true) {
        Window2D x{pick(rng, 1, 2), pick(rng, 1, 6), pick(rng, 1, 6), pick(rng, 1, 9), pick(rng, 1, 9),
                   pick(rng, 1, 3), pick(rng, 1, 3), pick(rng, 1, 3), pick(rng, 1, 3), pick(rng, 1, 2),
                   pick(rng, 1, 2), pick(rng, 0, 2), pick(rng, 0, 2), pick(rng, 0, 2), pick(rng, 0, 2)};
        if (x.h + x.pt + x.pb >= (x.kh - 1) * x.dh + 1 && x.w + x.pl + x.pr >= (x.kw - 1) * x.dw + 1) return x;
    }
}

int64_t out_size(int64_t in, int64_t pa, int64_t pb, int64_t k, int64_t s, int64_t d) {
    return (in + pa + pb - (k - 1) * d - 1) / s + 1;
}

TEST(FrontendCross, TfAndOneDnnGraphNhwc) {
    Rng rng(9009);
    for (int i = 0; i < 60; i++) {
        const Window2D x = random_window(rng);
        const int64_t oh = out_size(x.h, x.pt, x.pb, x.kh, x.sh, x.dh), ow = out_size(x.w, x.pl, x.pr, x.kw, x.sw, x.dw);
        const Shape in{x.n, x.h, x.w, x.cin}, filt{x.kh, x.kw, x.cin, x.cout}, dy{x.n, oh, ow, x.cout};
        SCOPED_TRACE("case " + std::to_string(i) + " in " + shape_string(in) + " filter " + shape_string(filt));
        tf::ConvAttrs t{{1, x.sh, x.sw, 1}, {1, x.dh, x.dw, 1}, "EXPLICIT", {0, 0, x.pt, x.pb, x.pl, x.pr, 0, 0}, "NHWC"};
        onednn::ConvAttrs o;
        o.strides = {x.sh, x.sw}, o.dilations = {x.dh, x.dw}, o.pads_begin = {x.pt, x.pl}, o.pads_end = {x.pb, x.pr};
        const auto vw = random_values(num_elements(filt), rng), vdy = random_values(num_elements(dy), rng),
                   vx = random_values(num_elements(in), rng);
        auto td = tf::conv2d_backprop_input(t, in, filt, dy, DType::kFloat32);
        auto od = onednn::convolution_backprop_data(o, dy, filt, {x.h, x.w}, DType::kFloat32);
        ASSERT_TRUE(td.is_ok()) << td.status.message();
        ASSERT_TRUE(od.is_ok()) << od.status.message();
        expect_identical(Direction::kBackwardData, td.value, od.value, vdy, vw);
        auto tw = tf::conv2d_backprop_filter(t, in, filt, dy, DType::kFloat32);
        auto ow_ = onednn::convolution_backprop_filters(o, in, dy, filt, DType::kFloat32);
        ASSERT_TRUE(tw.is_ok()) << tw.status.message();
        ASSERT_TRUE(ow_.is_ok()) << ow_.status.message();
        expect_identical(Direction::kBackwardWeights, tw.value, ow_.value, vx, vdy);
    }
}

TEST(FrontendCross, OneDnnGraphNcxOixAndOnnxConvTranspose) {
    Rng rng(9010);
    int compared = 0;
    for (int i = 0; i < 60; i++) {
        const Window2D x = random_window(rng);
        const int64_t groups = pick(rng, 1, 2);
        const int64_t cin = x.cin * groups, cout = x.cout * groups;
        const int64_t oh = out_size(x.h, x.pt, x.pb, x.kh, x.sh, x.dh), ow = out_size(x.w, x.pl, x.pr, x.kw, x.sw, x.dw);
        const Shape dy{x.n, cout, oh, ow}, filt{cout, x.cin, x.kh, x.kw};
        SCOPED_TRACE("case " + std::to_string(i) + " dy " + shape_string(dy) + " filter " + shape_string(filt));
        onednn::ConvAttrs o;
        o.data_format = "NCX", o.filter_format = "OIX", o.groups = groups;
        o.strides = {x.sh, x.sw}, o.dilations = {x.dh, x.dw}, o.pads_begin = {x.pt, x.pl}, o.pads_end = {x.pb, x.pr};
        onnx::ConvTransposeAttrs a;
        a.group = groups, a.strides = {x.sh, x.sw}, a.dilations = {x.dh, x.dw};
        a.output_shape = {x.h, x.w};  // fixes the size; the pads follow from it...
        a.auto_pad = "SAME_UPPER";    // ...split so that pad_begin = total // 2
        const int64_t total_h = x.sh * (oh - 1) + (x.kh - 1) * x.dh + 1 - x.h;
        const int64_t total_w = x.sw * (ow - 1) + (x.kw - 1) * x.dw + 1 - x.w;
        // ONNX splits with Python's floor division: a total of -1 (output_shape one past the
        // natural size) puts -1 before, which no oneDNN pad matches.
        auto floor_half = [](int64_t total) { return total >= 0 ? total / 2 : -((1 - total) / 2); };
        if (floor_half(total_h) != x.pt || floor_half(total_w) != x.pl) {  // then give the pads explicitly instead
            a.auto_pad = "NOTSET", a.output_shape.clear();
            const int64_t extra_h = x.h - (x.sh * (oh - 1) + (x.kh - 1) * x.dh + 1 - x.pt - x.pb);
            const int64_t extra_w = x.w - (x.sw * (ow - 1) + (x.kw - 1) * x.dw + 1 - x.pl - x.pr);
            if (extra_h >= std::max(x.sh, x.dh) || extra_w >= std::max(x.sw, x.dw)) continue;
            a.pads = {x.pt, x.pl, x.pb, x.pr};
            a.output_padding = {extra_h, extra_w};
        }
        auto od = onednn::convolution_backprop_data(o, dy, filt, {x.h, x.w}, DType::kFloat32);
        auto xd = onnx::conv_transpose(a, dy, filt, DType::kFloat32);
        ASSERT_TRUE(od.is_ok()) << od.status.message();
        ASSERT_TRUE(xd.is_ok()) << xd.status.message();
        expect_identical(Direction::kBackwardData, od.value, xd.value, random_values(num_elements(dy), rng),
                         random_values(num_elements(filt), rng));
        compared++;
    }
    EXPECT_GE(compared, 40) << "too many cases skipped: the test compares too little";
}

TEST(FrontendCross, TfConv3DSameAndOneDnnSameUpper) {
    Rng rng(9011);
    for (int i = 0; i < 30; i++) {
        const int64_t n = pick(rng, 1, 2), c = pick(rng, 1, 4), k = pick(rng, 1, 4);
        const Shape in{n, c, pick(rng, 1, 6), pick(rng, 1, 6), pick(rng, 1, 6)};
        const Shape filt{pick(rng, 1, 3), pick(rng, 1, 3), pick(rng, 1, 3), c, k};
        const std::vector<int64_t> s{pick(rng, 1, 2), pick(rng, 1, 2), pick(rng, 1, 2)};
        const Shape dy{n, k, (in[2] + s[0] - 1) / s[0], (in[3] + s[1] - 1) / s[1], (in[4] + s[2] - 1) / s[2]};
        SCOPED_TRACE("case " + std::to_string(i) + " in " + shape_string(in) + " filter " + shape_string(filt));
        tf::ConvAttrs t{{1, 1, s[0], s[1], s[2]}, {}, "SAME", {}, "NCDHW"};
        onednn::ConvAttrs o;
        o.data_format = "NCX", o.auto_pad = "same_upper", o.strides = s;
        auto td = tf::conv3d_backprop_input_v2(t, in, filt, dy, DType::kFloat32);
        auto od = onednn::convolution_backprop_data(o, dy, filt, {in[2], in[3], in[4]}, DType::kFloat32);
        ASSERT_TRUE(td.is_ok()) << td.status.message();
        ASSERT_TRUE(od.is_ok()) << od.status.message();
        expect_identical(Direction::kBackwardData, td.value, od.value, random_values(num_elements(dy), rng),
                         random_values(num_elements(filt), rng));
    }
}

// TF's depthwise filter [KH, KW, C, M] holds the same bytes as a grouped XIO filter
// [KH, KW, 1, C*M] with groups = C.
TEST(FrontendCross, TfDepthwiseAndOneDnnGraphGroups) {
    Rng rng(9012);
    for (int i = 0; i < 30; i++) {
        const int64_t n = pick(rng, 1, 2), c = pick(rng, 1, 6), m = pick(rng, 1, 3), h = pick(rng, 3, 9), w = pick(rng, 3, 9);
        const Shape in{n, h, w, c}, dw_filter{3, 3, c, m}, grouped_filter{3, 3, 1, c * m};
        const Shape dy{n, h, w, c * m};
        tf::ConvAttrs t{{}, {}, "SAME", {}, "NHWC"};
        onednn::ConvAttrs o;
        o.auto_pad = "same_upper", o.groups = c;
        auto td = tf::depthwise_conv2d_backprop_filter(t, in, dw_filter, dy, DType::kFloat32);
        auto od = onednn::convolution_backprop_filters(o, in, dy, grouped_filter, DType::kFloat32);
        ASSERT_TRUE(td.is_ok()) << td.status.message();
        ASSERT_TRUE(od.is_ok()) << od.status.message();
        expect_identical(Direction::kBackwardWeights, td.value, od.value, random_values(num_elements(in), rng),
                         random_values(num_elements(dy), rng));
    }
}

}  // namespace
}  // namespace convgrad::test
