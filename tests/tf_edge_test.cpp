// TensorFlow's edge cases, each against the float64 reference with NaN-poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>

#include "kernel_registry.h"
#include "reference_nd.h"
#include "registry_cpu.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

// A depthwise layer in NCHW: n images of c channels of h x w, a k x k filter, equal strides.
TfConv2D depthwise_nchw(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, std::string padding, int64_t stride) {
    return as_nchw(conv({n, h, w, c}, {k, k, 1, c}, std::move(padding), stride, stride));
}

// The same problem with NHWC activations (as_nchw undone).
TfConv2D as_nhwc(TfConv2D c) {
    if (c.data_format == "NHWC") return c;
    c.data_format = "NHWC";
    c.input = {c.input[0], c.input[2], c.input[3], c.input[1]};
    c.strides = {1, c.strides[2], c.strides[3], 1};
    c.dilations = {1, c.dilations[2], c.dilations[3], 1};
    if (c.explicit_paddings.size() == 8) {  // (before, after) per dim: N, C, H, W -> N, H, W, C
        const std::vector<int64_t> p = c.explicit_paddings;
        c.explicit_paddings = {p[0], p[1], p[4], p[5], p[6], p[7], p[2], p[3]};
    }
    return c;
}

// Runs both gradients of `c` (out_backprop inferred) and compares with the reference.
// The inputs are drawn in NHWC order whatever c's layout, so an NCHW problem and its NHWC
// twin see the same tensors and share their references: the last ones computed are kept
// (the reference's sums were most of these tests' time, natively and under qemu, and most
// problems here are checked in both layouts one after the other).
void expect_matches_reference(TfConv2D c, uint64_t seed = 7) {
    ASSERT_TRUE(infer_out_backprop(c)) << describe(c);
    SCOPED_TRACE(describe(c));
    TfConv2D twin = as_nhwc(c);
    ASSERT_TRUE(infer_out_backprop(twin));
    Rng rng(seed);
    auto x = random_values(num_elements(twin.input), rng);
    const auto w = random_values(num_elements(twin.filter), rng);
    auto dy = random_values(num_elements(twin.out_backprop), rng);
    struct References {
        std::string problem;
        uint64_t seed;
        std::vector<double> dx, dw;  // of the NHWC twin
    };
    static References last;
    if (last.problem != describe(twin) || last.seed != seed) {
        last = {describe(twin), seed, backprop_input(twin, w, dy), backprop_filter(twin, x, dy)};
    }
    std::vector<double> dx = last.dx;
    if (c.data_format == "NCHW") {  // NHWC -> NCHW
        const std::vector<int> to_nchw{0, 3, 1, 2};
        x = permute(x, twin.input, to_nchw);
        dy = permute(dy, twin.out_backprop, to_nchw);
        dx = permute(dx, twin.input, to_nchw);
    }
    for (bool input_grad : {true, false}) {
        const TfRunResult r = run_tf(c, input_grad, input_grad ? w : x, dy, false);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        EXPECT_LE(relative_error(r.result, input_grad ? dx : last.dw), 1e-5)
            << (input_grad ? "backprop input" : "backprop filter");
    }
}

// Checks which kernel the registry picks for `c`'s gradient named by the kernel (bwd_data_*:
// the data gradient, bwd_weights_*: the filter gradient), in `dtype`: routing alone, nothing
// runs (the tests that compare numbers run the kernels; under qemu, where the ARM64 tests
// emulate every run, these problems' runs took more time than their checks needed).
void expect_kernel(TfConv2D c, const std::string &kernel, DType dtype = DType::kFloat32) {
    const bool input_grad = kernel.rfind("bwd_data", 0) == 0;
    ASSERT_TRUE(infer_out_backprop(c));
    const Result<ConvProblem> p = tf_problem(c, input_grad, dtype);
    ASSERT_TRUE(p.is_ok()) << p.status.message();
    EXPECT_EQ(routed_kernel(p.value, input_grad ? Direction::kBackwardData : Direction::kBackwardWeights),
              kernel_on_this_path(kernel))
        << describe(c);
}

// The NHWC dense filter gradient's kernel past the refinements a test is about: nxc_wr over
// few positions (kernel_registry.h: kWholeReductionMaxPositions; the layers here have its
// channels; TfEdge.WholeReductionFilterGradient), else nxc.
std::string nxc_filter_kernel(TfConv2D c) {
    EXPECT_TRUE(infer_out_backprop(c));
    const int64_t positions = c.out_backprop[0] * c.out_backprop[1] * c.out_backprop[2];
    return positions <= kWholeReductionMaxPositions ? "bwd_weights_f32_nxc_wr" : "bwd_weights_f32_nxc";
}

// VALID, stride 3, kernel 2: input sizes 5, 6 and 7 all give output 2. input_sizes decides;
// the trailing rows no output reaches get zero gradient (checked against NaN poison).
TEST(TfEdge, AmbiguousInputSizes) {
    for (int64_t size : {5, 6, 7}) {
        TfConv2D c = conv({2, size, size, 3}, {2, 2, 3, 4}, "VALID", 3, 3);
        ASSERT_TRUE(infer_out_backprop(c));
        EXPECT_EQ(c.out_backprop[1], 2);
        expect_matches_reference(c);
    }
}

TEST(TfEdge, AmbiguousSizeTrailingRowsAreZero) {
    TfConv2D c = conv({1, 7, 7, 1}, {2, 2, 1, 1}, "VALID", 3, 3);
    ASSERT_TRUE(infer_out_backprop(c));
    Rng rng(3);
    const auto w = random_values(4, rng), dy = random_values(4, rng);
    const TfRunResult r = run_tf(c, true, w, dy, false);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    for (int64_t y = 0; y < 7; y++) {
        for (int64_t x = 0; x < 7; x++) {
            const bool reached = y < 5 && x < 5 && y % 3 < 2 && x % 3 < 2;
            if (!reached) EXPECT_EQ(r.result[y * 7 + x], 0.0) << "y=" << y << " x=" << x;
        }
    }
}

// SAME with stride larger than the kernel: inputs between taps get no gradient.
TEST(TfEdge, SameWithStrideLargerThanKernel) {
    expect_matches_reference(conv({2, 10, 11, 3}, {1, 2, 3, 5}, "SAME", 3, 4));
    expect_matches_reference(conv({1, 9, 9, 2}, {2, 2, 2, 2}, "SAME", 5, 5));
}

// Kernel larger than the input, with padding making the window fit.
TEST(TfEdge, KernelLargerThanInputWithPadding) {
    TfConv2D c = conv({2, 2, 3, 3}, {5, 6, 3, 4}, "EXPLICIT", 1, 1);
    c.explicit_paddings = {0, 0, 2, 2, 3, 3, 0, 0};
    expect_matches_reference(c);
    expect_matches_reference(conv({1, 3, 3, 2}, {5, 5, 2, 2}, "SAME", 1, 1));
}

// SAME padding is asymmetric when the total is odd (the extra row goes after).
TEST(TfEdge, SameOddTotalPadding) {
    TfConv2D c = conv({1, 6, 6, 2}, {4, 4, 2, 3}, "SAME", 1, 1);
    EXPECT_EQ(tf_window_ref(c, 0).pad_before, 1);
    expect_matches_reference(c);
}

TEST(TfEdge, DilationWithStride) {
    TfConv2D c = conv({2, 13, 12, 4}, {3, 2, 4, 6}, "SAME", 2, 3);
    c.dilations = {1, 3, 2, 1};
    expect_matches_reference(c);
}

TEST(TfEdge, UnequalStridesNchw) {
    TfConv2D c = conv({2, 3, 11, 9}, {3, 3, 3, 4}, "VALID", 1, 1);
    c.data_format = "NCHW";
    c.strides = {1, 1, 2, 3};
    expect_matches_reference(c);
}

TEST(TfEdge, GroupedFilters) {
    expect_matches_reference(conv({2, 7, 7, 12}, {3, 3, 3, 8}, "SAME", 1, 1));   // 4 groups
    expect_matches_reference(conv({1, 6, 6, 6}, {3, 3, 1, 12}, "VALID", 2, 1));  // depthwise-like, 6 groups
    // ResNeXt-like groups of 8 channels in both layouts: the small-group tiles (8 input
    // channels by half vectors, a row of 3 taps), whose update stage Halide 14 once
    // dropped in NCHW alone (bench/RESULTS.md, seventeenth session).
    const TfConv2D resnext = conv({2, 9, 10, 32}, {3, 3, 8, 32}, "SAME", 1, 1);
    expect_matches_reference(resnext);
    expect_matches_reference(as_nchw(resnext));
}

TEST(TfEdge, DepthwiseMultiplierDilationStride) {
    TfConv2D c = conv({2, 11, 10, 5}, {3, 3, 5, 3}, "SAME", 2, 2);
    c.depthwise = true;
    c.dilations = {1, 2, 2, 1};
    expect_matches_reference(c);
    c.data_format = "NCHW";
    c.input = {2, 5, 11, 10};
    c.strides = {1, 1, 2, 2};
    c.dilations = {1, 1, 2, 2};
    expect_matches_reference(c);
}

TEST(TfEdge, DepthwiseExplicitPadding) {
    TfConv2D c = conv({1, 6, 7, 4}, {3, 2, 4, 2}, "EXPLICIT", 1, 2);
    c.depthwise = true;
    c.explicit_paddings = {0, 0, 1, 0, 2, 3, 0, 0};
    expect_matches_reference(c);
}

// input_sizes of 2 ints ([H, W]): N from out_backprop, C from the filter.
TEST(TfEdge, InputSizesOfTwoInts) {
    tf::ConvAttrs attrs{{1, 2, 2, 1}, {}, "SAME", {}, "NHWC"};
    auto full = tf::conv2d_backprop_input(attrs, {3, 9, 9, 4}, {3, 3, 4, 5}, {3, 5, 5, 5}, DType::kFloat32);
    auto two = tf::conv2d_backprop_input(attrs, {9, 9}, {3, 3, 4, 5}, {3, 5, 5, 5}, DType::kFloat32);
    ASSERT_TRUE(full.is_ok()) << full.status.message();
    ASSERT_TRUE(two.is_ok()) << two.status.message();
    EXPECT_EQ(input_shape(two.value), (Shape{3, 9, 9, 4}));
    EXPECT_EQ(input_shape(full.value), input_shape(two.value));
    attrs.data_format = "NCHW";
    attrs.strides = {1, 1, 2, 2};
    auto nchw = tf::conv2d_backprop_input(attrs, {9, 9}, {3, 3, 4, 5}, {3, 5, 5, 5}, DType::kFloat32);
    ASSERT_TRUE(nchw.is_ok()) << nchw.status.message();
    EXPECT_EQ(input_shape(nchw.value), (Shape{3, 4, 9, 9}));
}

// Empty tensors: the result has the right shape and is all zeros (poisoned before).
TEST(TfEdge, ZeroBatch) {
    TfConv2D c = conv({0, 5, 5, 3}, {3, 3, 3, 2}, "SAME", 1, 1);
    ASSERT_TRUE(infer_out_backprop(c));
    const TfRunResult r = run_tf(c, false, {}, {}, false);  // filter gradient of an empty batch
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    ASSERT_EQ(r.result.size(), 3u * 3 * 3 * 2);
    for (double v : r.result) EXPECT_EQ(v, 0.0);
    Rng rng(1);
    const TfRunResult d = run_tf(c, true, random_values(54, rng), {}, false);
    ASSERT_TRUE(d.status.is_ok()) << d.status.message();
    EXPECT_TRUE(d.result.empty());
}

TEST(TfEdge, ZeroSizeOutBackprop) {
    // VALID, input 2, kernel 3, stride 2: TF computes (2 - 3 + 2) / 2 = 0 output rows.
    TfConv2D c = conv({2, 2, 5, 3}, {3, 1, 3, 4}, "VALID", 2, 1);
    ASSERT_TRUE(infer_out_backprop(c));
    ASSERT_EQ(c.out_backprop[1], 0);
    Rng rng(2);
    const TfRunResult d = run_tf(c, true, random_values(num_elements(c.filter), rng), {}, false);
    ASSERT_TRUE(d.status.is_ok()) << d.status.message();
    ASSERT_EQ(d.result.size(), 2u * 2 * 5 * 3);
    for (double v : d.result) EXPECT_EQ(v, 0.0);
    const TfRunResult w = run_tf(c, false, random_values(num_elements(c.input), rng), {}, false);
    ASSERT_TRUE(w.status.is_ok()) << w.status.message();
    for (double v : w.result) EXPECT_EQ(v, 0.0);
}

// Large enough to use full vectors, the parallel loops and the unit-stride specialisations.
TEST(TfEdge, VectorSizedLayers) {
    expect_matches_reference(conv({2, 17, 19, 32}, {3, 3, 32, 48}, "SAME", 1, 1));
    TfConv2D c = conv({2, 33, 21, 19}, {3, 3, 19, 17}, "SAME", 1, 1);
    c.data_format = "NCHW";
    c.input = {2, 19, 33, 21};
    expect_matches_reference(c);
    expect_matches_reference(conv({1, 20, 20, 16}, {1, 1, 16, 16}, "VALID", 2, 2));
}

// One problem per register-tile branch of the NHWC schedules (cpu_bwd_*.cpp), so every
// branch is checked whatever shapes the random tests draw: 7-pixel rows (7, 14, 21 wide),
// 2-vector / 1-vector / half-vector channel tiles, 8-channel groups, depthwise rows, and
// the vectorised reduction for fewer than 8 channels.
TEST(TfEdge, EveryTileBranch) {
    for (int64_t width : {7, 14, 21, 13}) {
        for (int64_t channels : {48, 16, 8, 3}) {
            expect_matches_reference(conv({2, 5, width, channels}, {3, 3, channels, 40}, "SAME", 1, 1));
            expect_matches_reference(conv({1, 9, 2 * width, channels}, {3, 3, channels, 24}, "SAME", 2, 2));
        }
        expect_matches_reference(conv({2, 4, width, 64}, {3, 3, 8, 64}, "SAME", 1, 1));   // groups: 8 in, 8 out
        expect_matches_reference(conv({2, 4, width, 72}, {3, 3, 12, 54}, "SAME", 1, 1));  // groups: 12 in, 9 out
        expect_matches_reference(conv({2, 6, width, 48}, {3, 3, 1, 48}, "SAME", 1, 1));   // depthwise
        expect_matches_reference(conv({2, 6, width, 40}, {5, 5, 1, 40}, "SAME", 2, 2));   // depthwise 5x5
    }
}

// The NHWC filter gradient's small-group tiles (8 or more input channels, 8-31 output
// channels per group: half a vector or one of co) hold a row of 3 taps when the filter is 3
// wide: half and whole co vectors, co counts with a guarded tail, 3-wide filters of other
// heights, stride 2, dilation, and 5-wide filters (one tap a tile).
TEST(TfEdge, SmallGroupRowTaps) {
    expect_matches_reference(conv({2, 9, 11, 64}, {3, 3, 8, 64}, "SAME", 1, 1));     // 8 groups: 8 in, 8 out
    expect_matches_reference(conv({2, 9, 11, 64}, {3, 3, 16, 80}, "SAME", 1, 1));    // 4 groups: 16 in, 20 out
    expect_matches_reference(conv({1, 7, 13, 48}, {3, 3, 12, 36}, "VALID", 1, 1));   // 4 groups: 12 in, 9 out
    expect_matches_reference(conv({2, 6, 10, 32}, {5, 3, 8, 32}, "SAME", 1, 1));     // 3 wide, 5 high
    expect_matches_reference(conv({2, 6, 10, 32}, {1, 3, 8, 32}, "SAME", 1, 1));     // 1 x 3
    expect_matches_reference(conv({2, 12, 15, 32}, {3, 3, 8, 32}, "SAME", 2, 2));    // stride 2
    expect_matches_reference(conv({2, 9, 11, 32}, {3, 5, 8, 32}, "SAME", 1, 1));     // 5 wide
    TfConv2D dilated = conv({2, 9, 11, 32}, {3, 3, 8, 32}, "SAME", 1, 1);
    dilated.dilations = {1, 2, 2, 1};
    expect_matches_reference(dilated);
}

// The small-group data-gradient kernel (nxc_sg: dy staged with 16 slots per pixel; it takes
// fewer than 16 dy channels per group and an even number of groups, which its x86 tiles hold
// in pairs): ResNeXt-like groups of 8 over rows of 30 (14-pixel tiles, one shifted inwards),
// 7-13 and under 7 pixels, 5-15 dy channels per group with several blocks of staged rows and
// a short last one (19 rows), 12 and 16 dx channels (tiles that overlap, two tiles), 5 and
// 6 (quarter-vector tiles with AVX-512) and 1 per group (a depthwise multiplier: the scalar nest), a
// stride and a dilation it takes. Odd group counts, 16 and 17 dy channels per group keep
// nxc, and stride 2 along an even width the x-phase kernel.
TEST(TfEdge, SmallGroupsStagedWithConstantStride) {
    for (const TfConv2D &c : {conv({2, 9, 30, 64}, {3, 3, 8, 64}, "SAME", 1, 1),      // 8 groups of 8
                              conv({2, 5, 11, 32}, {3, 3, 8, 32}, "SAME", 1, 1),      // 4 groups, 11 wide
                              conv({1, 6, 5, 16}, {3, 3, 8, 16}, "SAME", 1, 1),       // 2 groups, 5 wide
                              conv({1, 19, 17, 32}, {3, 3, 8, 20}, "SAME", 1, 1),     // 4 groups: 8 in, 5 out
                              conv({2, 19, 16, 24}, {3, 3, 12, 30}, "VALID", 1, 1),   // 2 groups: 12 in, 15 out
                              conv({2, 11, 15, 32}, {3, 3, 16, 24}, "SAME", 3, 3),    // 2 groups of 16 to 12, stride 3
                              conv({2, 7, 16, 10}, {3, 3, 5, 14}, "SAME", 1, 1)}) {   // 2 groups: 5 in, 7 out
        expect_matches_reference(c);
        expect_kernel(c, "bwd_data_f32_nxc_sg");
    }
    TfConv2D dilated = conv({2, 12, 14, 24}, {3, 3, 6, 40}, "SAME", 1, 1);  // 4 groups: 6 in, 10 out
    dilated.dilations = {1, 2, 3, 1};
    expect_matches_reference(dilated);
    expect_kernel(dilated, "bwd_data_f32_nxc_sg");
    TfConv2D multiplier = conv({2, 9, 12, 6}, {3, 3, 6, 4}, "SAME", 3, 3);  // (unit strides: nxc_px)
    multiplier.depthwise = true;
    expect_matches_reference(multiplier);
    expect_kernel(multiplier, "bwd_data_f32_nxc_sg");
    for (const TfConv2D &other : {conv({2, 9, 30, 16}, {3, 3, 8, 32}, "SAME", 1, 1),     // 2 groups: 16 out
                                  conv({2, 9, 30, 16}, {3, 3, 8, 34}, "SAME", 1, 1),     // 17 out
                                  conv({1, 19, 17, 40}, {3, 3, 8, 25}, "SAME", 1, 1),    // 5 groups
                                  conv({1, 10, 21, 6}, {3, 3, 6, 15}, "SAME", 2, 2)}) {  // one group, odd width
        expect_matches_reference(other);
        expect_kernel(other, "bwd_data_f32_nxc");
    }
    const TfConv2D phased = conv({2, 9, 30, 64}, {3, 3, 8, 64}, "SAME", 2, 2);
    expect_kernel(phased, "bwd_data_f32_nxc_s2");
}

// The dense filter gradients' x staged in blocks of the tile's input channels (x_blocks in
// cpu_bwd_weights.cpp: 8 with AVX-512, 4 with AVX2 and SSE4.1), each block's pixels
// contiguous: channel counts that end in a partial block (9, 12, 20: the last tile rounds
// up over the block's clamped slots), fewer than a block (1, 2, 5, 7: one block of that
// width), groups of 12 (blocks within each group), a stride and a dilation; NHWC (copied
// along rows) and NCHW (ncx: a transposing copy).
TEST(TfEdge, BlockedInputChannelFilters) {
    // (Batches with more than kWholeReductionMaxPositions positions where the channels would
    // send the layer to nxc_wr.)
    TfConv2D dilated = conv({5, 10, 11, 12}, {3, 3, 12, 40}, "SAME", 1, 1);
    dilated.dilations = {1, 2, 2, 1};
    for (const TfConv2D &c : {conv({6, 9, 10, 9}, {3, 3, 9, 32}, "SAME", 1, 1),
                              conv({6, 8, 11, 20}, {1, 1, 20, 48}, "VALID", 1, 1),
                              conv({13, 13, 12, 12}, {3, 3, 12, 64}, "SAME", 2, 2),
                              dilated,
                              conv({2, 9, 10, 24}, {3, 3, 12, 48}, "SAME", 1, 1),  // 2 groups of 12
                              conv({1, 9, 10, 7}, {3, 3, 7, 32}, "SAME", 1, 1),
                              conv({1, 9, 10, 5}, {3, 3, 5, 40}, "VALID", 1, 1),
                              conv({1, 9, 10, 2}, {3, 3, 2, 32}, "SAME", 1, 1),
                              conv({1, 9, 10, 1}, {3, 3, 1, 24}, "SAME", 1, 1)}) {
        expect_matches_reference(c);
        expect_kernel(c, "bwd_weights_f32_nxc");
        expect_matches_reference(as_nchw(c));
    }
    expect_kernel(as_nchw(conv({6, 9, 10, 9}, {3, 3, 9, 32}, "SAME", 1, 1)), "bwd_weights_f32_ncx");
}

// The small-group filter-gradient kernels (nxc_sg, ncx_sg: tiles over pairs of groups of 8
// dy channels, x and dy staged per chunk with each pair's pixels contiguous; NCHW's copies
// through TransposedRows): ResNeXt-like groups of 8, 16 x channels per group, a 5x5 filter (no row of 3
// taps), stride 2, a dilation, a pointwise filter, and enough rows for 12 chunks (each
// thread its own), in both layouts. Not taken: an odd number of groups, 4 x channels per
// group, 16 dy channels.
TEST(TfEdge, SmallGroupPairFilters) {
    TfConv2D dilated = conv({2, 12, 14, 32}, {3, 3, 8, 32}, "SAME", 1, 1);
    dilated.dilations = {1, 2, 3, 1};
    for (const TfConv2D &c : {conv({2, 9, 30, 64}, {3, 3, 8, 64}, "SAME", 1, 1),     // 8 groups of 8
                              conv({2, 9, 13, 64}, {3, 3, 16, 32}, "SAME", 1, 1),    // 4 groups: 16 in, 8 out
                              conv({2, 11, 12, 32}, {5, 5, 8, 32}, "SAME", 1, 1),    // 5x5
                              conv({2, 15, 16, 32}, {3, 3, 8, 32}, "SAME", 2, 2),    // stride 2
                              dilated,
                              conv({2, 7, 9, 64}, {1, 1, 8, 64}, "VALID", 1, 1),     // pointwise
                              conv({16, 28, 28, 128}, {3, 3, 8, 128}, "SAME", 1, 1)}) {  // 12 chunks
        expect_matches_reference(c);
        expect_kernel(c, "bwd_weights_f32_nxc_sg");
        expect_matches_reference(as_nchw(c));
        expect_kernel(as_nchw(c), "bwd_weights_f32_ncx_sg");
    }
    for (const TfConv2D &c : {conv({2, 9, 10, 24}, {3, 3, 8, 24}, "SAME", 1, 1),    // 3 groups
                              conv({2, 9, 10, 16}, {3, 3, 4, 32}, "SAME", 1, 1),    // 4 x channels
                              conv({2, 9, 10, 32}, {3, 3, 8, 64}, "SAME", 1, 1)}) {  // 16 dy channels
        expect_matches_reference(c);
        expect_kernel(c, "bwd_weights_f32_nxc");
        expect_kernel(as_nchw(c), "bwd_weights_f32_ncx");
    }
}

// Filter gradients large enough for the reduction's cache blocking (cpu_bwd_weights.cpp:
// chunks of ~512 KB of x and dy) to cut it several ways, each with a short last chunk:
// rows of one image (71 rows: 36 + 35), groups of whole images (29 images: 14 + 14 + 1),
// whole images with stride 2, grouped channels, and channels first; and x's staged pixels
// padded by a cache line (cpu_staging.h: 64 channels NHWC, 256 channels NCHW). (Output
// channels that are not whole slabs of 32 keep these layers off the Winograd kernel.)
TEST(TfEdge, CacheBlockedFilterGradient) {
    expect_matches_reference(conv({2, 71, 53, 32}, {3, 3, 32, 48}, "SAME", 1, 1));
    const TfConv2D images = conv({29, 10, 10, 64}, {3, 3, 64, 40}, "SAME", 1, 1);
    expect_matches_reference(images);
    expect_kernel(images, "bwd_weights_f32_nxc");
    expect_matches_reference(conv({3, 60, 44, 24}, {3, 3, 24, 40}, "SAME", 2, 2));
    expect_matches_reference(conv({3, 80, 48, 64}, {3, 3, 8, 64}, "SAME", 1, 1));  // 8 groups: 4x larger chunks
    TfConv2D c = conv({2, 71, 53, 32}, {3, 3, 32, 48}, "SAME", 1, 1);
    c.data_format = "NCHW";
    c.input = {2, 32, 71, 53};
    expect_matches_reference(c);
    const TfConv2D wide_pixels = as_nchw(conv({2, 6, 7, 256}, {3, 3, 256, 24}, "SAME", 1, 1));
    expect_matches_reference(wide_pixels);
    expect_kernel(wide_pixels, "bwd_weights_f32_ncx");
}

// Filter gradients with fewer than 8 chunks (small planes) split each chunk's tiles between
// the threads, a task running its co blocks in series (cpu_bwd_weights.cpp, `co_oi`). On
// AVX-512 f32 (8 x 32 tiles): a 1x1 layer with 5 ci blocks splits its 5 co blocks into 3
// tasks of 2, 2 and 1 (a guarded tail); a 3x3 layer has 72 other tasks, so all 3 co blocks
// (the last partial: 80 output channels, which keep it off the Winograd kernel) run in
// series; 20 channels take a partial co block.
TEST(TfEdge, FewChunkFilterTasks) {
    // (Batches with more than kWholeReductionMaxPositions positions: nxc_wr's otherwise.)
    const std::vector<TfConv2D> cases = {conv({6, 9, 11, 40}, {1, 1, 40, 160}, "VALID", 1, 1),
                                         conv({11, 7, 7, 64}, {3, 3, 64, 80}, "SAME", 1, 1),
                                         conv({1, 6, 5, 24}, {1, 1, 24, 20}, "VALID", 1, 1)};
    for (const TfConv2D &c : cases) {
        expect_matches_reference(c);
        expect_matches_reference(as_nchw(c));
    }
    expect_kernel(cases[1], "bwd_weights_f32_nxc");
}

// Filter-gradient chunks capped by their bytes (cpu_bwd_weights.cpp: filters of at most a
// quarter of `chunk_max_kb` whose rows of x and dy exceed a KB per position): a pointwise
// layer over the runtime's 448-position rows, one row a chunk (14 chunks, threads over
// chunks), and a 2x2 filter over 500-pixel rows (5 chunks, threads over tiles); NCHW takes
// ncx_db (not capped) and ncx.
TEST(TfEdge, CappedFilterChunks) {
    const std::vector<TfConv2D> cases = {conv({2, 56, 56, 64}, {1, 1, 64, 256}, "VALID", 1, 1),
                                         conv({1, 6, 500, 64}, {2, 2, 64, 200}, "VALID", 1, 1)};
    for (const TfConv2D &c : cases) {
        expect_matches_reference(c);
        expect_matches_reference(as_nchw(c));
    }
}

// Filter gradients with few input channels (cpu_bwd_weights.cpp: 3 channels by 4 vectors
// of co where ci is a multiple of 3 and co spans 4 vectors, else by 2; on AVX-512 float32,
// exactly 3 channels undilated along x take a row of taps: 7 by one vector of co, 3 by two):
// RGB stems with 7x7 and 3x3 filters, co a whole number of tiles and not (70, 40), strides
// 1 and 2, 7 taps dilated (the 4-vector tile), 6 channels (two full tiles), 4 and 5 (a
// partial one: the 2-vector tile), NHWC and NCHW.
TEST(TfEdge, FewInputChannelFilterTiles) {
    TfConv2D dilated_stem = conv({1, 30, 29, 3}, {7, 7, 3, 64}, "VALID", 1, 1);
    dilated_stem.dilations = {1, 1, 2, 1};
    const std::vector<TfConv2D> cases = {
        conv({2, 45, 38, 3}, {7, 7, 3, 64}, "SAME", 2, 2), conv({1, 33, 30, 3}, {3, 3, 3, 70}, "SAME", 1, 1),
        conv({2, 37, 23, 3}, {7, 7, 3, 40}, "SAME", 1, 1), conv({2, 31, 33, 3}, {3, 3, 3, 32}, "VALID", 2, 2),
        dilated_stem,
        conv({2, 20, 19, 6}, {3, 3, 6, 64}, "VALID", 1, 1), conv({1, 21, 18, 4}, {5, 5, 4, 64}, "SAME", 1, 1),
        conv({1, 16, 17, 5}, {3, 3, 5, 40}, "SAME", 2, 2)};
    for (const TfConv2D &c : cases) {
        expect_matches_reference(c);
        expect_matches_reference(as_nchw(c));
    }
}

// The pixel-vector data-gradient kernels (_px: at most 4 channels per group): each
// tiled branch (1-4 channels) with rows that are not a whole number of tiles, stride 1
// (with and without dilation, VALID and SAME) and stride 2 (the x-phase view; the 7x7 stem
// shape), grouped channels, and rows too narrow for a tile.
TEST(TfEdge, FewChannelPixelVectors) {
    for (int64_t channels : {1, 2, 3, 4}) {
        TfConv2D c = conv({2, 5, 70, channels}, {3, 3, channels, 24}, "SAME", 1, 1);
        expect_matches_reference(c);
        expect_kernel(c, "bwd_data_f32_nxc_px");
        c = conv({1, 13, 140, channels}, {7, 7, channels, 20}, "SAME", 2, 2);
        expect_matches_reference(c);
        expect_kernel(c, "bwd_data_f32_nxc_s2_px");
    }
    TfConv2D dilated = conv({1, 9, 131, 3}, {3, 3, 3, 17}, "VALID", 1, 1);
    dilated.dilations = {1, 2, 2, 1};
    expect_matches_reference(dilated);
    expect_matches_reference(conv({2, 6, 66, 6}, {3, 3, 3, 16}, "SAME", 1, 1));   // 2 groups of 3
    expect_matches_reference(conv({1, 11, 132, 3}, {5, 5, 3, 8}, "VALID", 2, 2));  // stride 2, VALID
    expect_matches_reference(conv({2, 5, 20, 3}, {3, 3, 3, 24}, "SAME", 1, 1));   // narrower than a tile
    // Wider layers keep the channel-vector kernels.
    expect_kernel(conv({1, 5, 70, 5}, {3, 3, 5, 24}, "SAME", 1, 1), "bwd_data_f32_nxc");
    // Rows narrower than px_vectors vectors (2- and 1-vector tiles, the last shifted inwards),
    // groups of 4 channels (ResNeXt's first stage), and several blocks of staged dy rows with
    // a short last one (19 rows): every tile branch and the per-block staging.
    for (const TfConv2D &c : {conv({2, 19, 40, 16}, {3, 3, 4, 8}, "SAME", 1, 1),   // 4 groups of 4, 2 vectors
                              conv({1, 19, 20, 6}, {3, 3, 2, 9}, "SAME", 1, 1),    // 3 groups of 2, 1 vector
                              conv({2, 10, 56, 3}, {3, 3, 3, 5}, "SAME", 1, 1)}) {  // 56: 2 vectors, shifted
        expect_matches_reference(c);
        expect_kernel(c, "bwd_data_f32_nxc_px");
    }
    const TfConv2D phased = conv({1, 19, 40, 8}, {5, 5, 4, 6}, "SAME", 2, 2);  // 2 groups, 20-pixel phases
    expect_matches_reference(phased);
    expect_kernel(phased, "bwd_data_f32_nxc_s2_px");

    // NCHW (ncx_px, ncx_s2_px: dy read along its rows, both x phases in a tile), and rows too
    // narrow for a vector, which keep the channel-vector ncx kernel.
    for (int64_t channels : {1, 2, 3, 4}) {
        TfConv2D c = as_nchw(conv({2, 5, 70, channels}, {3, 3, channels, 24}, "SAME", 1, 1));
        expect_matches_reference(c);
        expect_kernel(c, "bwd_data_f32_ncx_px");
        c = as_nchw(conv({1, 13, 140, channels}, {7, 7, channels, 20}, "SAME", 2, 2));
        expect_matches_reference(c);
        expect_kernel(c, "bwd_data_f32_ncx_s2_px");
    }
    expect_matches_reference(as_nchw(dilated));
    expect_matches_reference(as_nchw(conv({1, 11, 132, 3}, {5, 5, 3, 8}, "VALID", 2, 2)));
    expect_matches_reference(as_nchw(conv({1, 7, 33, 3}, {3, 3, 3, 8}, "SAME", 2, 2)));  // odd: no phases
    const TfConv2D narrow = as_nchw(conv({2, 5, 12, 3}, {3, 3, 3, 24}, "SAME", 1, 1));
    expect_matches_reference(narrow);
    expect_kernel(narrow, "bwd_data_f32_ncx");
}

// Depthwise data gradients over several blocks of staged dy rows (8 dx rows per block in
// cpu_bwd_data.cpp) with a short last block: stride 1, the x-phase stride-2 variant, 5x5
// VALID, and dilation.
TEST(TfEdge, DepthwiseRowBlocks) {
    expect_matches_reference(conv({2, 21, 19, 48}, {3, 3, 1, 48}, "SAME", 1, 1));
    expect_matches_reference(conv({1, 37, 30, 32}, {3, 3, 1, 32}, "SAME", 2, 2));
    expect_matches_reference(conv({2, 17, 13, 40}, {5, 5, 1, 40}, "VALID", 1, 1));
    TfConv2D dilated = conv({1, 19, 23, 16}, {3, 3, 1, 16}, "SAME", 1, 1);
    dilated.dilations = {1, 2, 2, 1};
    expect_matches_reference(dilated);
}

// Depthwise filter gradients with at least 512 groups add their chunks' sums per block of
// 128 groups in parallel (cpu_bwd_weights.cpp): 520 groups leave a last block of 8; NHWC
// and NCHW (channel vectors on small planes), stride 1 and 2; 511 groups, one block. (NHWC
// small planes take nxg_gt, a task per block of groups, the last shifted inwards; nxg's
// blocks are checked on a plane past nxg_gt's largest at stride 3, past nxg_xp's.)
TEST(TfEdge, DepthwiseManyGroupsFilter) {
    for (int64_t groups : {520, 511}) {
        for (int64_t stride : {1, 2}) {
            const TfConv2D c = conv({2, 7, 6, groups}, {3, 3, 1, groups}, "SAME", stride, stride);
            expect_matches_reference(c);
            expect_matches_reference(as_nchw(c));
        }
    }
    expect_kernel(conv({2, 7, 6, 520}, {3, 3, 1, 520}, "SAME", 1, 1), "bwd_weights_f32_nxg_gt");
    const TfConv2D large = conv({1, 88, 86, 520}, {3, 3, 1, 520}, "SAME", 3, 3);  // dy 30x29
    expect_matches_reference(large);
    expect_kernel(large, "bwd_weights_f32_nxg");
    expect_kernel(as_nchw(conv({2, 7, 6, 520}, {3, 3, 1, 520}, "SAME", 1, 1)), "bwd_weights_f32_ncg");
}

// NHWC depthwise filter gradients with exactly two vectors of groups take a tile of both
// (cpu_bwd_weights.cpp: pixel_tile), and with 32 vector registers so do whole pairs of
// vectors under filters of at most 9 taps: 32 groups (AVX-512 f32) and 16 (AVX2 f32), 64
// and 96 (AVX-512: 2 and 3 tiles of two vectors a pixel; AVX2: 4 and 6 vectors, one a
// tile), 3x3 with stride 1 and 2, 5x5 and a 3x5 filter (no tap specialisation; past 9 taps
// one-vector tiles for 64 and 96), odd widths; 48 groups keep the one-vector tiles. (64 and
// 96 groups on these planes take nxg_gt: on a plane past its largest, at stride 3, past
// nxg_xp's, they take nxg's tiles.)
TEST(TfEdge, DepthwisePixelTileFilter) {
    for (int64_t groups : {32, 16, 64, 96}) {
        for (int64_t stride : {1, 2}) {
            expect_matches_reference(conv({2, 9, 13, groups}, {3, 3, 1, groups}, "SAME", stride, stride));
        }
        expect_matches_reference(conv({2, 11, 9, groups}, {5, 5, 1, groups}, "SAME", 1, 1));
        expect_matches_reference(conv({1, 7, 10, groups}, {3, 5, 1, groups}, "VALID", 1, 1));
        expect_kernel(conv({2, 9, 13, groups}, {3, 3, 1, groups}, "SAME", 1, 1),
                      groups >= 64 ? "bwd_weights_f32_nxg_gt" : "bwd_weights_f32_nxg");
        if (groups >= 64) {
            const TfConv2D large = conv({1, 88, 86, groups}, {3, 3, 1, groups}, "SAME", 3, 3);
            expect_matches_reference(large);
            expect_kernel(large, "bwd_weights_f32_nxg");
        }
    }
}

// NHWC depthwise filter gradients whose dy streams from memory (at least 8 MB) with pixels
// wider than two cache lines and at most 3x3 taps, on planes too small for nxg_xp (more than
// a third of their positions in its frame) and too few groups for nxg_gt (48: 192-byte
// pixels), take nxg_sd, dy staged per chunk (kernel_registry.h: kStagedDyMinBytes): 3x3
// stride 1 and 2; smaller dy, 32 groups (128-byte pixels) and 5x5 filters on a plane past
// nxg_gt's stay on nxg.
TEST(TfEdge, StagedDyDepthwiseFilter) {
    const TfConv2D small = conv({700, 8, 8, 48}, {3, 3, 1, 48}, "SAME", 1, 1);  // dy 8.6 MB
    expect_matches_reference(small);
    expect_kernel(small, "bwd_weights_f32_nxg_sd");
    const TfConv2D strided = conv({2800, 7, 7, 48}, {3, 3, 1, 48}, "SAME", 2, 2);  // dy 8.6 MB on 4x4
    expect_matches_reference(strided);
    expect_kernel(strided, "bwd_weights_f32_nxg_sd");
    const TfConv2D five = conv({1, 150, 150, 144}, {5, 5, 1, 144}, "SAME", 1, 1);  // dy 13 MB
    expect_matches_reference(five);
    expect_kernel(five, "bwd_weights_f32_nxg");
    expect_kernel(conv({100, 8, 8, 48}, {3, 3, 1, 48}, "SAME", 1, 1), "bwd_weights_f32_nxg");  // dy 1.2 MB
    expect_kernel(conv({1024, 8, 8, 32}, {3, 3, 1, 32}, "SAME", 1, 1), "bwd_weights_f32_nxg");  // 8.4 MB, 128-byte pixels
}

// NCHW data gradients with more than 4 channels per group and rows that whole vectors cover
// well take the row tiles too (ncx_px, ncx_s2_px): every (channels, vectors) tile branch
// (6/4/3/2/1 channels x 4 vectors, 8 x 2, 8 x 1; with stride 2 both phases, so fewer
// channels), channel counts that leave a shifted last tile, 8-channel groups, dilation;
// rows that tiles would cover poorly (33 pixels) keep the channel-vector ncx kernel, and so
// do layers whose tiles would reduce over more than 64 KB of dy's rows (kernel_registry.h):
// 240 dy channels over 3x3 taps (ncx_cs for whole slabs of dx channels, else ncx), and 160
// over 3x3. Pointwise layers (dy in place) take ncx_px_pw whatever their dy channels.
TEST(TfEdge, ChannelsFirstRowTiles) {
    const auto nchw = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t out, std::string padding,
                         int64_t stride) {
        return as_nchw(conv({n, h, w, c}, {k, k, c, out}, std::move(padding), stride, stride));
    };
    for (int64_t channels : {5, 6, 7, 13, 24}) {
        for (int64_t width : {16, 30, 32, 64, 112}) {
            TfConv2D c = nchw(2, 3, width, channels, 3, 10, "SAME", 1);
            expect_matches_reference(c);
            if (channels == 13) expect_kernel(c, "bwd_data_f32_ncx_px");
        }
        TfConv2D s2 = nchw(1, 6, 128, channels, 3, 12, "SAME", 2);
        expect_matches_reference(s2);
        if (channels == 13) expect_kernel(s2, "bwd_data_f32_ncx_s2_px");
        expect_matches_reference(nchw(1, 5, 64, channels, 1, 9, "VALID", 1));
        expect_matches_reference(nchw(1, 7, 36, channels, 3, 8, "SAME", 2));  // q = 18: one-vector tiles
    }
    TfConv2D grouped = nchw(2, 4, 28, 32, 3, 32, "SAME", 1);  // 4 groups of 8
    grouped.filter = {3, 3, 8, 32};
    expect_matches_reference(grouped);
    expect_kernel(grouped, "bwd_data_f32_ncx_px");
    TfConv2D dilated = nchw(2, 9, 48, 12, 3, 10, "SAME", 1);
    dilated.dilations = {1, 1, 2, 2};
    expect_matches_reference(dilated);
    const TfConv2D poorly_covered = nchw(1, 5, 33, 16, 3, 8, "SAME", 1);
    expect_matches_reference(poorly_covered);
    expect_kernel(poorly_covered, "bwd_data_f32_ncx");
    // (240: not whole slabs of dy channels, which the Winograd kernel, ncx_wg, would take.)
    const TfConv2D wide_dy_slabs = nchw(1, 4, 80, 32, 3, 240, "SAME", 1);
    expect_matches_reference(wide_dy_slabs);
    expect_kernel(wide_dy_slabs, "bwd_data_f32_ncx_cs");
    const TfConv2D wide_dy_pointwise = nchw(1, 4, 80, 32, 1, 256, "VALID", 1);
    expect_matches_reference(wide_dy_pointwise);
    expect_kernel(wide_dy_pointwise, "bwd_data_f32_ncx_px_pw");
    const TfConv2D wide_dy = nchw(1, 6, 32, 24, 3, 160, "SAME", 1);
    expect_matches_reference(wide_dy);
    expect_kernel(wide_dy, "bwd_data_f32_ncx");
    const TfConv2D narrow_dy = nchw(1, 6, 32, 24, 3, 64, "SAME", 1);  // 64 x 3 x 3 lines: 36 KB
    expect_kernel(narrow_dy, "bwd_data_f32_ncx_px");
}

// Depthwise layers in NCHW with rows of at least 16 pixels: with stride 2 the data gradient
// takes the row-vector kernel (ncg_s2_px: schedules/cpu_bwd_data_pixels.cpp), with unit
// strides ncg (or ncg_fp: DepthwiseFlatPlanes), and the filter gradient the channel-vector
// ncg (planes transposed in cache): each tile branch (4, 2 and 1 vectors, the last tile
// shifted inwards), rows that are not a whole number of vectors (the filter gradient's
// reduction reads zeros past dy's width), stride 2 in both directions (the data gradient's
// x-phase view), 5x5 and non-square filters, dilation, a stride the filter gradient loads
// through gathers, and rows too narrow for a vector (channel-vector ncg).
TEST(TfEdge, DepthwiseChannelsFirstRows) {
    const auto nchw = depthwise_nchw;
    const auto expect_kernels = [](const TfConv2D &c, const std::string &data, const std::string &filter) {
        expect_kernel(c, data);
        expect_kernel(c, filter);
    };
    for (int64_t width : {16, 19, 40, 70, 131}) {
        expect_matches_reference(nchw(2, 5, width, 6, 3, "SAME", 1));
        expect_matches_reference(nchw(1, 9, 2 * width, 5, 3, "SAME", 2));
        expect_matches_reference(nchw(2, 7, width, 3, 5, "VALID", 1));
    }
    // (Unit strides with dx and dy of one width take the flat-plane kernels: below.)
    expect_kernels(nchw(2, 7, 40, 3, 3, "VALID", 1), "bwd_data_f32_ncg", "bwd_weights_f32_ncg");
    expect_kernels(nchw(1, 9, 64, 5, 3, "SAME", 2), "bwd_data_f32_ncg_s2_px", "bwd_weights_f32_ncg");
    // The stride-2 data gradient's branches: 3x3 undilated (taps unrolled; SAME above, VALID
    // here), 5x5 and dilated (taps at run time, stride 2 constant), stride 2 along x only.
    expect_matches_reference(nchw(2, 11, 66, 3, 3, "VALID", 2));
    expect_matches_reference(nchw(1, 9, 64, 3, 5, "SAME", 2));
    TfConv2D s2_dilated = nchw(1, 10, 64, 3, 3, "SAME", 2);
    s2_dilated.dilations = {1, 1, 2, 2};
    expect_matches_reference(s2_dilated);
    const TfConv2D s2_x_only = as_nchw(conv({1, 9, 64, 3}, {3, 3, 1, 3}, "SAME", 1, 2));
    expect_matches_reference(s2_x_only);
    expect_kernel(s2_x_only, "bwd_data_f32_ncg_s2_px");
    expect_matches_reference(nchw(1, 10, 67, 4, 3, "SAME", 2));  // odd width: stride 2 without phases
    expect_matches_reference(nchw(1, 11, 50, 4, 3, "VALID", 3));  // stride 3: gathered loads of x
    TfConv2D dilated = nchw(2, 9, 37, 4, 3, "SAME", 1);
    dilated.dilations = {1, 1, 2, 2};
    expect_matches_reference(dilated);
    TfConv2D wide = nchw(2, 6, 45, 4, 3, "SAME", 1);  // a 1x3 filter: the taps' general loop
    wide.filter = {1, 3, 1, 4};
    expect_matches_reference(wide);
    TfConv2D native = nchw(2, 6, 33, 8, 3, "SAME", 1);  // DepthwiseConv2dNative's filter
    native.depthwise = true;
    native.filter = {3, 3, 8, 1};
    expect_matches_reference(native);
    // Taller planes with unit strides (ncg, and ncg_fp for SAME planes of at most
    // kFlatPlaneMax positions): heights that leave a partial block of rows, rows of one to
    // several vectors, 3x3 and 5x5 filters (taps unrolled), and dilated and 1x3 ones (taps at
    // run time). VALID: dy narrower than dx, which the flat-plane kernels do not take.
    for (const char *padding : {"VALID", "SAME"}) {
        for (int64_t height : {10, 19, 28}) {
            for (int64_t width : {18, 28, 40, 70}) expect_matches_reference(nchw(2, height, width, 3, 3, padding, 1));
            expect_matches_reference(nchw(1, height, 37, 2, 5, padding, 1));
            TfConv2D tall_dilated = nchw(1, height, 37, 2, 3, padding, 1);
            tall_dilated.dilations = {1, 1, 2, 2};
            expect_matches_reference(tall_dilated);
            TfConv2D tall_wide = nchw(1, height, 45, 2, 3, padding, 1);
            tall_wide.filter = {1, 3, 1, 2};
            expect_matches_reference(tall_wide);
        }
    }
    expect_kernels(nchw(2, 19, 40, 3, 3, "VALID", 1), "bwd_data_f32_ncg", "bwd_weights_f32_ncg");
    // Rows narrower than a vector keep the channel-vector kernels (with unit strides, planes
    // outside ncg_fp's ranges: kFlatPlaneMin to kFlatPlaneMax positions, and for a 3x3 data
    // gradient kFlatPlaneMinSmallFilter to kFlatSmallPlaneMax too), which run per block of
    // one vector of groups (planes staged and dx written in cache): fewer groups than a
    // block, a partial last block, whole blocks; stride 2, 5x5, dilated, batch 1.
    expect_kernels(nchw(2, 7, 7, 24, 5, "SAME", 1), "bwd_data_f32_ncg", "bwd_weights_f32_ncg");
    expect_kernels(nchw(2, 7, 7, 24, 3, "SAME", 1), "bwd_data_f32_ncg", "bwd_weights_f32_ncg");
    expect_kernels(nchw(2, 5, 5, 24, 3, "SAME", 1), "bwd_data_f32_ncg_fp", "bwd_weights_f32_ncg");
    expect_kernels(nchw(2, 3, 5, 24, 3, "SAME", 1), "bwd_data_f32_ncg", "bwd_weights_f32_ncg");
    expect_kernels(nchw(2, 7, 14, 24, 3, "VALID", 1), "bwd_data_f32_ncg", "bwd_weights_f32_ncg");
    expect_matches_reference(nchw(2, 7, 14, 24, 3, "SAME", 1));
    for (int64_t groups : {5, 16, 40}) {
        expect_matches_reference(nchw(2, 7, 7, groups, 3, "SAME", 1));
        expect_matches_reference(nchw(2, 14, 14, groups, 3, "SAME", 2));
        expect_matches_reference(nchw(1, 9, 11, groups, 5, "VALID", 1));
        // Staged rows of 8 positions, one whole chunk of the TransposedRows pass and no masked
        // rest: x's rows of a 6-wide SAME plane (with its border), dy's of an 8-wide VALID one.
        expect_matches_reference(nchw(2, 6, 6, groups, 3, "SAME", 1));
        expect_matches_reference(nchw(2, 10, 10, groups, 3, "VALID", 1));
        // Partial chunks of 4 (x) and 2 (dy) positions: one 4-lane load a row, masked loads.
        expect_matches_reference(nchw(2, 4, 4, groups, 3, "VALID", 1));
        TfConv2D narrow_dilated = nchw(2, 10, 9, groups, 3, "SAME", 1);
        narrow_dilated.dilations = {1, 1, 2, 2};
        expect_matches_reference(narrow_dilated);
    }
    expect_kernels(nchw(2, 14, 14, 40, 3, "SAME", 2), "bwd_data_f32_ncg", "bwd_weights_f32_ncg");
    // Both gradients' tasks: a block of groups over a run of images (3 blocks over 7 images,
    // and 9 over 3 with a shifted last block: runs of 2, the last of 1; every image in one
    // run: DepthwiseManyGroupsFilter's 520 and 511 groups). (With 4 images or more, SAME
    // planes of 7x7 take the flat-plane filter gradient: DepthwiseFlatPlanesFilter. VALID
    // ones, dy narrower than x, stay on ncg.)
    expect_kernels(nchw(7, 7, 7, 48, 5, "SAME", 1), "bwd_data_f32_ncg", "bwd_weights_f32_ncg_fp");
    expect_kernel(nchw(7, 11, 11, 48, 5, "VALID", 1), "bwd_weights_f32_ncg");
    for (int64_t k : {3, 5}) {
        expect_matches_reference(nchw(7, 7, 7, 48, k, "SAME", 1));
        expect_matches_reference(nchw(7, 11, 11, 48, k, "VALID", 1));
        expect_matches_reference(nchw(3, 7, 7, 136, k, "SAME", 1));
    }
}

// Data gradients with whole slabs of 32 dx channels per group take the channel-slab
// kernels (nxc_cs, ncx_cs: the filter packed in slabs of the tile's width): 7-pixel rows,
// rows of 6+ pixels with a short last tile, rows narrower than a tile (one pixel a tile),
// 3 slabs, 2 groups of one slab, stride 2 along an odd width (no x phases), dilation, and
// NCHW rows too narrow for the row tiles; 48 channels (not whole slabs) keep nxc. Each
// slab's tiles run over the whole row where its filter outweighs dy's rows (all but the
// last case), else one x tile per slab in turn (a flat row of 33 for 32 channels).
TEST(TfEdge, ChannelSlabFilters) {
    const std::vector<TfConv2D> cases = {conv({2, 7, 7, 64}, {3, 3, 64, 40}, "SAME", 1, 1),
                                         conv({1, 5, 13, 32}, {3, 3, 32, 24}, "SAME", 1, 1),
                                         conv({2, 3, 5, 96}, {1, 1, 96, 70}, "VALID", 1, 1),  // NCHW: a flat row of 15
                                         conv({1, 6, 9, 64}, {3, 3, 32, 48}, "SAME", 1, 1),  // 2 groups
                                         conv({1, 9, 11, 32}, {3, 3, 32, 16}, "SAME", 2, 2),
                                         conv({1, 3, 11, 32}, {1, 1, 32, 16}, "VALID", 1, 1)};
    for (const TfConv2D &c : cases) {
        expect_matches_reference(c);
        expect_kernel(c, "bwd_data_f32_nxc_cs");
        expect_matches_reference(as_nchw(c));
        expect_kernel(as_nchw(c), "bwd_data_f32_ncx_cs");
    }
    TfConv2D dilated = conv({1, 9, 10, 32}, {3, 3, 32, 20}, "SAME", 1, 1);
    dilated.dilations = {1, 2, 3, 1};
    expect_matches_reference(dilated);
    expect_kernel(dilated, "bwd_data_f32_nxc_cs");
    const TfConv2D partial = conv({1, 7, 7, 48}, {3, 3, 48, 40}, "SAME", 1, 1);
    expect_matches_reference(partial);
    expect_kernel(partial, "bwd_data_f32_nxc");
}

// Pointwise data gradients read dy in place. NHWC with whole slabs of 64 dx channels per
// group (nxc_pw: 4 x 6 tiles with AVX-512): a flat row of 49 (a shifted last tile), rows
// of 288 at batch 1 (576 positions: two rows, two threads), 4 positions (narrower than a
// tile), 2 groups of 64, and 36 output channels. Not taken: 96 channels (nxc_cs), stride
// 2, a 3x3 filter. NCHW with rows of pixel vectors (ncx_px_pw: channel tiles of 6 x 4
// vectors of a row): rows of 288 and 64 positions (shifted last channel tiles), a 45-pixel
// row (a shifted last run) of 96 channels (whole channel tiles), 2 groups of 20; rows that
// vectors fill badly (49) and narrower than a vector (4) keep ncx_cs, and so do layers whose
// channels give ci * co >= 128 * (ci + co) (kernel_registry.h: kPointwiseRowTileMaxProducts;
// 256 <- 256 at the bound, 256 <- 224 just under it), unless ncx_cs cannot take their dx
// channels (200: not whole slabs).
TEST(TfEdge, PointwiseDataInPlace) {
    const std::vector<TfConv2D> cases = {conv({2, 7, 7, 64}, {1, 1, 64, 40}, "VALID", 1, 1),
                                         conv({1, 24, 24, 128}, {1, 1, 128, 50}, "SAME", 1, 1),
                                         conv({3, 2, 2, 64}, {1, 1, 64, 33}, "VALID", 1, 1),
                                         conv({1, 5, 6, 128}, {1, 1, 64, 48}, "VALID", 1, 1),  // 2 groups
                                         conv({2, 6, 6, 192}, {1, 1, 192, 36}, "VALID", 1, 1)};
    for (const TfConv2D &c : cases) {
        expect_matches_reference(c);
        expect_kernel(c, "bwd_data_f32_nxc_pw");
    }
    expect_kernel(conv({2, 7, 7, 96}, {1, 1, 96, 40}, "VALID", 1, 1), "bwd_data_f32_nxc_cs");
    const TfConv2D strided = conv({1, 9, 9, 64}, {1, 1, 64, 40}, "VALID", 2, 2);
    expect_matches_reference(strided);
    expect_kernel(strided, "bwd_data_f32_nxc_cs");
    expect_kernel(conv({1, 7, 7, 64}, {3, 3, 64, 40}, "SAME", 1, 1), "bwd_data_f32_nxc_cs");
    const std::vector<TfConv2D> rows = {conv({1, 24, 24, 128}, {1, 1, 128, 50}, "SAME", 1, 1),
                                        conv({2, 8, 8, 64}, {1, 1, 64, 40}, "VALID", 1, 1),
                                        conv({1, 5, 9, 96}, {1, 1, 96, 70}, "VALID", 1, 1),
                                        conv({2, 4, 12, 40}, {1, 1, 20, 16}, "VALID", 1, 1)};  // 2 groups
    for (const TfConv2D &c : rows) {
        expect_matches_reference(as_nchw(c));
        expect_kernel(as_nchw(c), "bwd_data_f32_ncx_px_pw");
    }
    expect_kernel(as_nchw(cases[0]), "bwd_data_f32_ncx_cs");
    expect_kernel(as_nchw(cases[2]), "bwd_data_f32_ncx_cs");
    const TfConv2D many = as_nchw(conv({2, 14, 14, 256}, {1, 1, 256, 256}, "VALID", 1, 1));
    expect_matches_reference(many);
    expect_kernel(many, "bwd_data_f32_ncx_cs");
    const TfConv2D fewer = as_nchw(conv({2, 14, 14, 256}, {1, 1, 256, 224}, "VALID", 1, 1));
    expect_matches_reference(fewer);
    expect_kernel(fewer, "bwd_data_f32_ncx_px_pw");
    const TfConv2D partial_slab = as_nchw(conv({1, 14, 14, 200}, {1, 1, 200, 1024}, "VALID", 1, 1));
    expect_matches_reference(partial_slab);
    expect_kernel(partial_slab, "bwd_data_f32_ncx_px_pw");
}

// Pointwise NHWC data gradients over small planes (nxc_pw). The images fold into rows as
// long as no thread gets more images (runtime/src/execute.cpp: fold_images_into_rows), and
// over fewer than 4 rows with a filter of 64 KB or more that outweighs dy, the kernel's
// tasks are groups of filter slabs (schedules/cpu_bwd_data.cpp), so which loops run depends
// on the pool's threads: 1, 2 and 3 here. 8 images of 7x7 (one row of 392, two of 196, or a
// row per image), 6 of 5x5 (one row of 150; two of 75, a partial last tile; three of 50),
// batches of 1 with 8 and 9 slabs of dx channels (groups of 1 and of 2, the last group
// partial) and 2 groups of 128 channels, 3 images of 640 channels (5 slab groups).
TEST(TfEdge, PointwiseDataRowsAndSlabGroups) {
    const std::vector<TfConv2D> cases = {conv({8, 7, 7, 64}, {1, 1, 64, 40}, "VALID", 1, 1),
                                         conv({6, 5, 5, 128}, {1, 1, 128, 24}, "VALID", 1, 1),
                                         conv({1, 7, 7, 512}, {1, 1, 512, 64}, "VALID", 1, 1),
                                         conv({1, 5, 7, 576}, {1, 1, 576, 256}, "VALID", 1, 1),
                                         conv({1, 7, 7, 256}, {1, 1, 128, 512}, "VALID", 1, 1),  // 2 groups
                                         conv({3, 7, 7, 640}, {1, 1, 640, 96}, "VALID", 1, 1)};
    for (int threads : {1, 2, 3}) {
        convgrad::set_num_threads(threads);
        for (const TfConv2D &c : cases) {
            expect_matches_reference(c);
            expect_kernel(c, "bwd_data_f32_nxc_pw");
        }
    }
    convgrad::set_num_threads(0);
}

// NCHW pointwise filter gradients whose dy has at least as many channels per group as x,
// and x at least kDyBroadcastMinChannels (32), take the dy-broadcast kernel (ncx_db: dy read
// in place, x transposed): a flat row of 196, rows of 448 (28x112 planes), 48 channels (a
// partial tile), 44 output channels (a partial broadcast tile), 2 groups, and a batch of
// one. Not taken: fewer dy channels than x, 16 x channels, a 3x3 filter, stride 2, and NHWC.
TEST(TfEdge, DyBroadcastFilters) {
    const auto pointwise = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t co, int64_t groups) {
        return as_nchw(conv({n, h, w, c}, {1, 1, c / groups, co}, "VALID", 1, 1));
    };
    const std::vector<TfConv2D> cases = {pointwise(2, 14, 14, 32, 64, 1), pointwise(1, 28, 112, 32, 32, 1),
                                         pointwise(2, 5, 13, 48, 48, 1), pointwise(2, 7, 9, 40, 44, 1),
                                         pointwise(2, 6, 9, 64, 96, 2), pointwise(1, 3, 5, 32, 40, 1)};
    for (const TfConv2D &c : cases) {
        expect_matches_reference(c);
        expect_kernel(c, "bwd_weights_f32_ncx_db");
    }
    const std::vector<TfConv2D> others = {pointwise(2, 7, 7, 64, 48, 1), pointwise(2, 7, 7, 16, 64, 1),
                                          as_nchw(conv({2, 9, 9, 32}, {3, 3, 32, 64}, "SAME", 1, 1)),
                                          as_nchw(conv({2, 9, 9, 32}, {1, 1, 32, 64}, "VALID", 2, 2)),
                                          conv({2, 7, 7, 32}, {1, 1, 32, 64}, "VALID", 1, 1)};
    for (const TfConv2D &c : others) {
        expect_matches_reference(c);
        expect_kernel(c, c.data_format == "NCHW" ? "bwd_weights_f32_ncx" : nxc_filter_kernel(c));
    }
}

// Pointwise convolutions (1x1, unit strides, no padding) run as 1-D ones over the flattened
// positions (runtime/src/execute.cpp: flatten_pointwise): 14x14 NCHW planes are then one
// 196-pixel row, which the row-vector kernel takes (14-pixel rows it does not). NHWC and
// NCHW, grouped, gapped views (not flattened), and 1x1 with padding (not pointwise). Planes
// over 512 positions are taken as rows of the longest divisor up to 512 (24x32: 2 rows of
// 384), or one row where no divisor of at least 64 exists (23x29).
TEST(TfEdge, PointwiseFlattened) {
    const auto pointwise = [](int64_t h, int64_t w, int64_t c, int64_t co, int64_t groups) {
        return conv({2, h, w, c}, {1, 1, c / groups, co}, "VALID", 1, 1);
    };
    expect_kernel(as_nchw(pointwise(14, 14, 8, 16, 1)), "bwd_data_f32_ncx_px_pw");
    for (const auto &[h, w] : std::vector<std::pair<int64_t, int64_t>>{{14, 14}, {7, 7}, {5, 13}, {1, 40}, {24, 32}, {23, 29}}) {
        for (int64_t groups : {1, 4}) {
            expect_matches_reference(pointwise(h, w, 8, 12, groups));
            expect_matches_reference(as_nchw(pointwise(h, w, 8, 12, groups)));
        }
    }
    Rng rng(9);
    for (bool nchw : {false, true}) {
        const TfConv2D c0 = pointwise(6, 9, 8, 12, 1);
        TfConv2D c = nchw ? as_nchw(c0) : c0;
        ASSERT_TRUE(infer_out_backprop(c));
        const auto x = random_values(num_elements(c.input), rng), w = random_values(num_elements(c.filter), rng);
        const auto dy = random_values(num_elements(c.out_backprop), rng);
        for (bool input_grad : {true, false}) {
            const auto ref = input_grad ? backprop_input(c, w, dy) : backprop_filter(c, x, dy);
            const TfRunResult r = run_tf(c, input_grad, input_grad ? w : x, dy, true);  // gapped
            ASSERT_TRUE(r.status.is_ok()) << r.status.message();
            EXPECT_LE(relative_error(r.result, ref), 1e-5) << describe(c);
        }
    }
    TfConv2D padded = as_nchw(pointwise(6, 9, 8, 12, 1));
    padded.padding = "EXPLICIT";
    padded.explicit_paddings = {0, 0, 0, 0, 1, 0, 0, 2};
    expect_matches_reference(padded);
}

// Depthwise NCHW data gradients with unit strides and dx, dy of one width: the flat-plane
// kernel, each plane one flat row (generators/flat_planes.h), for planes of 64 to 1024
// positions (3x3 filters also 16 to 25); their filter gradients take ncg (the same problems
// check it). Planes at those bounds and just outside; planes of one wide tile exactly (64)
// and just over, rows narrower and wider than a vector, one row; group counts around the
// tasks' blocks of 8; 3x3 and 5x5 filters (taps unrolled), dilated, 1x3 and 2x2 (taps at
// run time, padding after only); explicit padding with dy shorter than dx, and with all of
// x's padding on one side.
TEST(TfEdge, DepthwiseFlatPlanes) {
    const auto nchw = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, std::string padding) {
        return depthwise_nchw(n, h, w, c, k, std::move(padding), 1);
    };
    expect_kernel(nchw(2, 8, 8, 5, 3, "SAME"), "bwd_data_f32_ncg_fp");
    expect_kernel(nchw(2, 8, 8, 5, 3, "SAME"), "bwd_weights_f32_ncg");
    // Under 64 positions (and over 25 for 3x3 taps) and over 1024: the data gradient on
    // channel vectors.
    expect_kernel(nchw(2, 7, 9, 5, 3, "SAME"), "bwd_data_f32_ncg");
    expect_kernel(nchw(2, 7, 9, 5, 5, "SAME"), "bwd_data_f32_ncg");
    expect_kernel(nchw(2, 5, 5, 5, 5, "SAME"), "bwd_data_f32_ncg");
    expect_kernel(nchw(2, 5, 5, 5, 3, "SAME"), "bwd_data_f32_ncg_fp");
    expect_kernel(nchw(2, 4, 4, 5, 3, "SAME"), "bwd_data_f32_ncg_fp");
    expect_kernel(nchw(2, 3, 5, 5, 3, "SAME"), "bwd_data_f32_ncg");
    expect_kernel(nchw(1, 32, 32, 2, 3, "SAME"), "bwd_data_f32_ncg_fp");
    expect_kernel(nchw(1, 32, 33, 2, 3, "SAME"), "bwd_data_f32_ncg");
    expect_kernel(nchw(1, 91, 91, 2, 3, "SAME"), "bwd_data_f32_ncg");
    expect_kernel(nchw(1, 32, 32, 2, 3, "SAME"), "bwd_weights_f32_ncg");
    for (const auto &[h, w] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {5, 13}, {4, 16}, {9, 11}, {1, 70}, {3, 40}, {28, 28}, {4, 256}}) {
        for (int64_t groups : {5, 8, 17}) expect_matches_reference(nchw(groups == 8 ? 1 : 2, h, w, groups, 3, "SAME"));
        expect_matches_reference(nchw(2, h, w, 3, 5, "SAME"));
        TfConv2D dilated = nchw(2, h, w, 3, 3, "SAME");
        dilated.dilations = {1, 1, 2, 2};
        expect_matches_reference(dilated);
        TfConv2D row = nchw(1, h, w, 4, 3, "SAME");
        row.filter = {1, 3, 1, 4};
        expect_matches_reference(row);
        expect_matches_reference(nchw(3, h, w, 2, 2, "SAME"));
    }
    // Small planes, the data gradient's tasks of up to 32 planes (G / 4 of them, the last
    // block partial): 7 groups (1 a task), 70 (17), 200 (32).
    for (const auto &[h, w] : std::vector<std::pair<int64_t, int64_t>>{{5, 5}, {4, 4}, {3, 6}, {8, 8}}) {
        for (int64_t groups : {7, 70, 200}) expect_matches_reference(nchw(groups == 200 ? 1 : 2, h, w, groups, 3, "SAME"));
        TfConv2D dilated = nchw(2, h, w, 3, 3, "SAME");
        dilated.dilations = {1, 1, 2, 2};
        expect_matches_reference(dilated);
    }
    TfConv2D shorter = nchw(2, 12, 20, 6, 3, "EXPLICIT");
    shorter.explicit_paddings = {0, 0, 0, 0, 0, 0, 1, 1};  // NCHW: dy 10 rows of 20
    expect_kernel(shorter, "bwd_data_f32_ncg_fp");
    expect_matches_reference(shorter);
    TfConv2D one_side = nchw(2, 12, 20, 6, 3, "EXPLICIT");
    one_side.explicit_paddings = {0, 0, 0, 0, 2, 0, 0, 2};
    expect_matches_reference(one_side);
}

// Depthwise NCHW filter gradients with unit strides, x and dy of one width and dense planes,
// on small planes (at most kFlatFilterPlaneMax positions) over 4 images or more: the
// flat-plane kernel, each image's planes one row read in place (generators/flat_planes.h).
// Planes of one vector (4x4) to kFlatFilterPlaneMax (16x16) and just over it, partial last
// vectors (7x7: 49 of 64 lanes), 3 groups (only one interior group: the first and last read
// through zeros) and 2 (ncg), 3 images (ncg) and 4, group counts around the tasks' blocks
// (G/16, at most 32), 3x3 and 5x5 filters (taps unrolled), dilated, 1x3 and 2x2 ones (taps
// at run time), explicit padding with dy shorter than x and all of it on one side, an image
// stride of 4 KB (ncg: kernel_registry.h, kFlatFilterAliasBytes), float64.
TEST(TfEdge, DepthwiseFlatPlanesFilter) {
    const auto nchw = [](int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, std::string padding) {
        return depthwise_nchw(n, h, w, c, k, std::move(padding), 1);
    };
    expect_kernel(nchw(4, 7, 7, 40, 3, "SAME"), "bwd_weights_f32_ncg_fp");
    expect_kernel(nchw(3, 7, 7, 40, 3, "SAME"), "bwd_weights_f32_ncg");
    expect_kernel(nchw(4, 7, 7, 3, 3, "SAME"), "bwd_weights_f32_ncg_fp");
    expect_kernel(nchw(4, 7, 7, 2, 3, "SAME"), "bwd_weights_f32_ncg");
    expect_kernel(nchw(4, 4, 4, 5, 3, "SAME"), "bwd_weights_f32_ncg_fp");
    expect_kernel(nchw(4, 16, 16, 5, 3, "SAME"), "bwd_weights_f32_ncg_fp");
    expect_kernel(nchw(4, 16, 17, 5, 3, "SAME"), "bwd_weights_f32_ncg");
    expect_kernel(nchw(4, 8, 8, 16, 3, "SAME"), "bwd_weights_f32_ncg");  // 16 planes of 256 bytes: 4 KB
    expect_kernel(nchw(4, 7, 9, 5, 3, "VALID"), "bwd_weights_f32_ncg");  // dy narrower than x
    for (const auto &[h, w] : std::vector<std::pair<int64_t, int64_t>>{{4, 4}, {7, 7}, {5, 13}, {1, 40}, {10, 10}, {16, 16}}) {
        for (int64_t groups : {3, 5, 40, 97}) expect_matches_reference(nchw(4, h, w, groups, 3, "SAME"));
        if (h >= 5) expect_matches_reference(nchw(5, h, w, 6, 5, "SAME"));
        TfConv2D dilated = nchw(4, h, w, 6, 3, "SAME");
        dilated.dilations = {1, 1, 2, 2};
        expect_matches_reference(dilated);
        TfConv2D row = nchw(4, h, w, 6, 3, "SAME");
        row.filter = {1, 3, 1, 6};
        expect_matches_reference(row);
        expect_matches_reference(nchw(4, h, w, 6, 2, "SAME"));
    }
    TfConv2D shorter = nchw(4, 12, 12, 6, 3, "EXPLICIT");
    shorter.explicit_paddings = {0, 0, 0, 0, 0, 0, 1, 1};  // NCHW: dy 10 rows of 12
    expect_kernel(shorter, "bwd_weights_f32_ncg_fp");
    expect_matches_reference(shorter);
    TfConv2D one_side = nchw(4, 12, 12, 6, 3, "EXPLICIT");
    one_side.explicit_paddings = {0, 0, 0, 0, 2, 0, 0, 2};
    expect_kernel(one_side, "bwd_weights_f32_ncg_fp");
    expect_matches_reference(one_side);
    expect_matches_reference(nchw(8, 7, 7, 960, 3, "SAME"));  // MobileNet's last depthwise layer
    // float32 and float64 on tensors aligned as frameworks allocate them and one element into
    // their storage (no vector of x or dy aligned).
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
        TfConv2D c = nchw(4, 7, 7, 40, 3, "SAME");
        ASSERT_TRUE(infer_out_backprop(c));
        tf::ConvAttrs attrs{c.strides, c.dilations, c.padding, c.explicit_paddings, c.data_format};
        Result<ConvProblem> p = tf::conv2d_backprop_filter(attrs, c.input, c.filter, c.out_backprop, dtype);
        ASSERT_TRUE(p.is_ok()) << p.status.message();
        Rng rng(3);
        const auto x = random_values(num_elements(c.input), rng), dy = random_values(num_elements(c.out_backprop), rng);
        const auto ref = backprop_filter(c, x, dy);
        const bool f64 = dtype == DType::kFloat64;
        expect_matches_at_offsets(p.value, Direction::kBackwardWeights, x, dy, ref, f64 ? 1e-12 : 1e-5,
                                  f64 ? "bwd_weights_f64_ncg_fp" : "bwd_weights_f32_ncg_fp");
    }
}

// Where the reference is finite (the sums no infinity reaches, most of them), the result is
// finite and matches it.
void expect_finite_sums_match(const std::vector<double> &result, const std::vector<double> &ref) {
    ASSERT_EQ(result.size(), ref.size());
    int finite = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        if (!std::isfinite(ref[i])) continue;
        finite++;
        EXPECT_TRUE(std::isfinite(result[i])) << "element " << i;
        EXPECT_NEAR(result[i], ref[i], 1e-4 * (1 + std::fabs(ref[i]))) << "element " << i;
    }
    EXPECT_GT(finite, static_cast<int>(ref.size()) / 2);
}

// The flat-plane filter gradient reads past each row's end and each plane's (its last vector,
// and the taps' offsets) into the neighbouring row or plane, and masks those sums away by
// select: infinities there must not reach the sums they do not belong to. Infinities in x's
// last column of a row, x's last position of a plane (the next plane's first row reads it)
// and dy's first position of a plane (the previous plane's last vector reads it).
TEST(TfEdge, DepthwiseFlatPlanesFilterNeighboursStayOut) {
    TfConv2D c = as_nchw(conv({4, 7, 7, 6}, {3, 3, 1, 6}, "SAME", 1, 1));
    ASSERT_TRUE(infer_out_backprop(c));
    expect_kernel(c, "bwd_weights_f32_ncg_fp");
    Rng rng(5);
    auto x = random_values(num_elements(c.input), rng), dy = random_values(num_elements(c.out_backprop), rng);
    const int64_t width = 7, plane = 49, inf_groups = 6;
    const double inf = std::numeric_limits<double>::infinity();
    x[1 * plane + 3 * width + width - 1] = inf;  // image 0, group 1, row 3's last pixel
    x[(inf_groups + 2) * plane + plane - 1] = inf;   // image 1, group 2's last pixel
    dy[(2 * inf_groups + 4) * plane] = inf;          // image 2, group 4's first pixel
    const auto ref = backprop_filter(c, x, dy);
    const TfRunResult r = run_tf(c, false, x, dy, false);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    expect_finite_sums_match(r.result, ref);
}

// `c` (EXPLICIT padding) with pads of 2 and 0 on one axis and 0 and 3 on the other, and
// dilation 2: taps past x on different sides along each axis.
TfConv2D uneven_pads_dilated(TfConv2D c) {
    c.explicit_paddings = {0, 0, 2, 0, 0, 3, 0, 0};
    c.dilations = {1, 2, 2, 1};
    return c;
}

// The gradient of `c` in direction `d` (random inputs from `seed`: x and dy for the filter
// gradient, w and dy for the data gradient) in float32 and float64, run by the kernel
// `variant` (<direction>_<dtype>_<variant>; float64 by `f64_variant` where given: it is not
// built with every refinement, generators/CMakeLists.txt), matches the reference with
// tensors aligned and one element into their storage.
void expect_gradient_by(TfConv2D c, Direction d, const std::string &variant, uint64_t seed,
                        const std::string &f64_variant = "") {
    ASSERT_TRUE(infer_out_backprop(c));
    SCOPED_TRACE(describe(c));
    const bool data = d == Direction::kBackwardData;
    Rng rng(seed);
    const auto x_or_w = random_values(num_elements(data ? c.filter : c.input), rng);
    const auto dy = random_values(num_elements(c.out_backprop), rng);
    const auto ref = data ? backprop_input(c, x_or_w, dy) : backprop_filter(c, x_or_w, dy);
    // run_problem's inputs: dy then w for the data gradient, x then dy for the filter gradient.
    const auto &first = data ? dy : x_or_w, &second = data ? x_or_w : dy;
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
        const Result<ConvProblem> p = tf_problem(c, data, dtype);
        ASSERT_TRUE(p.is_ok()) << p.status.message();
        const bool f64 = dtype == DType::kFloat64;
        expect_matches_at_offsets(p.value, d, first, second, ref, f64 ? 1e-12 : 1e-5,
                                  std::string(data ? "bwd_data_" : "bwd_weights_") +
                                      (f64 ? "f64_" + (f64_variant.empty() ? variant : f64_variant) : "f32_" + variant));
    }
}

// expect_gradient_by for the filter gradient.
void expect_filter_gradient_by(TfConv2D c, const std::string &variant, uint64_t seed, const std::string &f64_variant = "") {
    expect_gradient_by(std::move(c), Direction::kBackwardWeights, variant, seed, f64_variant);
}

// Dense filter gradients with few products per element of a large x (its group's dy channels
// times the taps over the strides' product; x of kPlainXMinBytes or more) take the plain-x
// kernels (nxc_xp, ncx_xp: x without the tile's channel blocks), at most kPlainXMaxProducts
// (AMD and other CPUs) or, on Intel, kPlainXMaxProductsIntel for nxc_xp and none for ncx_xp:
// stride-2 3x3 layers in both layouts, float32 and float64 (which nxc and ncx take: float64
// has no plain-x variants), tensors aligned and one element into their storage; the rules'
// edges name the kernels on either side, and the host's rule is one of the two.
TEST(TfEdge, PlainXFilterGradient) {
    const TfConv2D c = conv({2, 64, 64, 128}, {3, 3, 128, 64}, "SAME", 2, 2);  // 4 MB of float32 x, 144 products
    {
        const ScopedRegistryCpu other(RegistryCpu::kOther);
        expect_filter_gradient_by(c, "nxc_xp", 5, "nxc");
        expect_filter_gradient_by(as_nchw(c), "ncx_xp", 5, "ncx");
        // Pointwise, 64 x channels over 4 MB: 384 dy channels are 384 products, 400 too many; and
        // one row fewer of x is under 4 MB. (NHWC: NCHW's pointwise layers with dy the larger go
        // to ncx_db.)
        expect_kernel(conv({1, 128, 128, 64}, {1, 1, 64, 384}, "VALID", 1, 1), "bwd_weights_f32_nxc_xp");
        expect_kernel(conv({1, 128, 128, 64}, {1, 1, 64, 400}, "VALID", 1, 1), "bwd_weights_f32_nxc");
        expect_kernel(conv({1, 127, 128, 64}, {1, 1, 64, 384}, "VALID", 1, 1), "bwd_weights_f32_nxc");
        EXPECT_EQ(plain_x_max_products(false), kPlainXMaxProducts);
    }
    {
        // (The kernels' results are checked above: the same NHWC problem and kernel, and ncx
        // everywhere; here the routing alone, which under qemu saves ~55 s of emulation.)
        const ScopedRegistryCpu intel(RegistryCpu::kIntel);
        expect_kernel(c, "bwd_weights_f32_nxc_xp");
        expect_kernel(as_nchw(c), "bwd_weights_f32_ncx");
        expect_kernel(c, "bwd_weights_f64_nxc", DType::kFloat64);  // no plain-x variants in float64
        expect_kernel(as_nchw(c), "bwd_weights_f64_ncx", DType::kFloat64);
        // Pointwise: 144 dy channels are 144 products, 145 too many; stride 2 over 2 x 2 taps
        // (576 / 4).
        expect_kernel(conv({1, 128, 128, 64}, {1, 1, 64, 144}, "VALID", 1, 1), "bwd_weights_f32_nxc_xp");
        expect_kernel(conv({1, 128, 128, 64}, {1, 1, 64, 145}, "VALID", 1, 1), "bwd_weights_f32_nxc");
        expect_kernel(conv({1, 128, 128, 64}, {2, 2, 64, 144}, "VALID", 2, 2), "bwd_weights_f32_nxc_xp");
        expect_kernel(conv({1, 128, 128, 64}, {1, 1, 64, 384}, "VALID", 1, 1), "bwd_weights_f32_nxc");
    }
    const bool intel = host_cpu_vendor() == "GenuineIntel";
    EXPECT_EQ(plain_x_max_products(false), intel ? kPlainXMaxProductsIntel : kPlainXMaxProducts);
    EXPECT_EQ(plain_x_max_products(true), intel ? kChannelsFirstPlainXMaxProductsIntel : kPlainXMaxProducts);
}

// nxc_xp reads x in place and leaves out of the reduction the positions whose tap falls on
// the padding (an RDom predicate per axis, generators/bwd_weights_generator.cpp): explicit
// pads of 2 and 0 on one axis and 0 and 3 on the other with dilation 2, stride 3 over sizes
// that are no multiple of it (SAME), a 5x5 filter at stride 2 (VALID), ragged channel counts
// (60 x, 24-40 dy), float32 (float64 through nxc), tensors aligned and one element into their
// storage. (Under the registry's rule for other CPUs than Intel's: 200-216 products.)
TEST(TfEdge, PlainXSkipsThePadding) {
    const ScopedRegistryCpu other(RegistryCpu::kOther);
    const TfConv2D dilated = uneven_pads_dilated(conv({2, 100, 100, 60}, {3, 3, 60, 24}, "EXPLICIT", 1, 1));
    for (const TfConv2D &c : {dilated, conv({2, 101, 103, 60}, {3, 3, 60, 40}, "SAME", 3, 3),
                              conv({2, 100, 100, 60}, {5, 5, 60, 32}, "VALID", 2, 2)}) {
        expect_filter_gradient_by(c, "nxc_xp", 7, "nxc");
    }
}

// NHWC depthwise filter gradients with at most 9 taps whose frame (the positions with a tap
// past x) is at most a third of dy's take nxg_xp: x read in place, each index clamped, and
// the frame's products summed again and subtracted (generators/bwd_weights_generator.cpp):
// 32 groups (a two-vector tile), stride 2 on odd sizes, explicit pads of 2 and 0 on one axis
// and 0 and 3 on the other with dilation 2, a 1x3 filter, VALID (no frame), 8 groups (fewer
// than a vector), float32 and float64 (which has no plain-x variant: nxg), tensors aligned and
// one element into their storage.
// Strided along x, the reduction leaves out the first columns whose taps read before x and
// the last column, and the frame adds their taps that read inside it: stride 2 with
// dilation 2 and uneven pads (none before, 3 after), VALID with strides (1, 2), a 1x3
// filter on 31 columns; one column less, the uneven pads put two columns' taps past x's
// end (nxg).
// A 7x7 plane (half of it frame) and a 5x5 filter stay on nxg (with 48 groups: not nxg_gt);
// MobileNet's 112x112 layers take nxg_xp over nxg_sd. (The rule for CPUs other than Intel's,
// on any host: Intel's is DepthwisePlainXOnIntel's.)
TEST(TfEdge, DepthwisePlainXFilter) {
    const ScopedRegistryCpu other(RegistryCpu::kOther);
    expect_filter_gradient_by(conv({2, 30, 34, 32}, {3, 3, 1, 32}, "SAME", 1, 1), "nxg_xp", 11, "nxg");
    expect_filter_gradient_by(conv({2, 59, 61, 48}, {3, 3, 1, 48}, "SAME", 2, 2), "nxg_xp", 12, "nxg");
    expect_filter_gradient_by(uneven_pads_dilated(conv({1, 40, 36, 64}, {3, 3, 1, 64}, "EXPLICIT", 1, 1)), "nxg_xp", 13, "nxg");
    expect_filter_gradient_by(conv({2, 20, 24, 16}, {1, 3, 1, 16}, "SAME", 1, 1), "nxg_xp", 14, "nxg");
    expect_filter_gradient_by(conv({2, 18, 20, 24}, {3, 3, 1, 24}, "VALID", 1, 1), "nxg_xp", 15, "nxg");
    expect_filter_gradient_by(conv({2, 24, 24, 8}, {3, 3, 1, 8}, "SAME", 1, 1), "nxg_xp", 16, "nxg");
    expect_filter_gradient_by(uneven_pads_dilated(conv({2, 61, 59, 32}, {3, 3, 1, 32}, "EXPLICIT", 2, 2)), "nxg_xp", 17, "nxg");
    expect_filter_gradient_by(uneven_pads_dilated(conv({2, 61, 58, 32}, {3, 3, 1, 32}, "EXPLICIT", 2, 2)), "nxg", 20);
    expect_filter_gradient_by(conv({2, 33, 45, 24}, {3, 3, 1, 24}, "VALID", 1, 2), "nxg_xp", 18, "nxg");
    expect_filter_gradient_by(conv({2, 20, 31, 16}, {1, 3, 1, 16}, "SAME", 1, 2), "nxg_xp", 19, "nxg");
    expect_kernel(conv({2, 7, 7, 48}, {3, 3, 1, 48}, "SAME", 1, 1), "bwd_weights_f32_nxg");
    expect_kernel(conv({2, 28, 28, 48}, {5, 5, 1, 48}, "SAME", 1, 1), "bwd_weights_f32_nxg");
    const TfConv2D large = conv({2, 112, 112, 96}, {3, 3, 1, 96}, "SAME", 1, 1);  // dy 9.6 MB
    expect_matches_reference(large);
    expect_kernel(large, "bwd_weights_f32_nxg_xp");
    expect_kernel(conv({2, 60, 60, 32}, {3, 3, 1, 32}, "SAME", 3, 3), "bwd_weights_f32_nxg");
}

// On Intel cores nxg_xp takes only the AVX-512 path's problems whose tiles span two vectors
// of groups (a multiple of 32 float32 groups) or whose pixels are at most
// kDepthwisePlainXIntelMaxVectors vectors wide (128 float32 groups), and nxg_sd only planes
// of more frame than nxg_xp takes (kernel_registry.h); the others take nxg. Past the rules'
// edges: 144 groups (mb_dw144_56), 136; 120, 128 and 160 stay on nxg_xp; on the other paths
// none does. 96 groups at stride 3 (no nxg_xp: strides of at most 2) take nxg_sd under the
// other vendors' rule and nxg under Intel's, and 700 images of 8x8 (half frame) nxg_sd
// under both.
TEST(TfEdge, DepthwisePlainXOnIntel) {
    const auto layer = [](int64_t n, int64_t size, int64_t groups, int64_t stride = 1) {
        return conv({n, size, size, groups}, {3, 3, 1, groups}, "SAME", stride, stride);
    };
    const TfConv2D strided = layer(8, 168, 96, 3), small_planes = layer(700, 8, 48);  // dy 9.6 and 8.6 MB
    {
        const ScopedRegistryCpu intel(RegistryCpu::kIntel);
        const bool avx512 = expected_isa_path() == "avx512_skylake";
        expect_kernel(layer(8, 56, 144), "bwd_weights_f32_nxg");
        expect_kernel(layer(2, 56, 136), "bwd_weights_f32_nxg");
        expect_kernel(layer(2, 56, 120), avx512 ? "bwd_weights_f32_nxg_xp" : "bwd_weights_f32_nxg");
        expect_kernel(layer(2, 56, 128), avx512 ? "bwd_weights_f32_nxg_xp" : "bwd_weights_f32_nxg");
        expect_kernel(layer(2, 56, 160), avx512 ? "bwd_weights_f32_nxg_xp" : "bwd_weights_f32_nxg");
        expect_kernel(layer(2, 56, 32), avx512 ? "bwd_weights_f32_nxg_xp" : "bwd_weights_f32_nxg");
        expect_kernel(strided, "bwd_weights_f32_nxg");
        expect_kernel(small_planes, "bwd_weights_f32_nxg_sd");
    }
    const ScopedRegistryCpu other(RegistryCpu::kOther);
    expect_kernel(layer(8, 56, 144), "bwd_weights_f32_nxg_xp");
    expect_kernel(layer(2, 56, 136), "bwd_weights_f32_nxg_xp");
    expect_kernel(strided, "bwd_weights_f32_nxg_sd");
    expect_kernel(small_planes, "bwd_weights_f32_nxg_sd");
}

// nxg_xp reads x past its edges where its taps reach the padding, and subtracts those
// products again: along a stride-2 axis at the reflected pixel (-1 reads 1), which the same
// tap reads at another position, so an infinity in x reaches only the taps whose true sums
// it reaches; strided along x, the columns at the ends are read only where inside x.
// Infinities at x's first column and first row on even pixels, which the taps that read odd
// ones never read (clamped to the edge instead, inf - inf made them NaN).
TEST(TfEdge, DepthwisePlainXEdgesStayOut) {
    const ScopedRegistryCpu other(RegistryCpu::kOther);
    TfConv2D c = conv({1, 31, 31, 16}, {3, 3, 1, 16}, "EXPLICIT", 2, 2);
    c.explicit_paddings = {0, 0, 1, 1, 1, 1, 0, 0};
    ASSERT_TRUE(infer_out_backprop(c));
    expect_kernel(c, "bwd_weights_f32_nxg_xp");
    Rng rng(9);
    auto x = random_values(num_elements(c.input), rng), dy = random_values(num_elements(c.out_backprop), rng);
    const int64_t width = 31, groups = 16;
    x[(5 * width + 0) * groups + 3] = std::numeric_limits<double>::infinity();   // row 5, column 0
    x[(0 * width + 6) * groups + 7] = -std::numeric_limits<double>::infinity();  // row 0, column 6
    const auto ref = backprop_filter(c, x, dy);
    const TfRunResult r = run_tf(c, false, x, dy, false);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    expect_finite_sums_match(r.result, ref);
}

// NHWC depthwise filter gradients with 3x3 or 5x5 filters on planes of at most 28x28 dy
// positions and at least 256 bytes of groups per pixel take nxg_gt (a task per block of
// groups over every image, kernel_registry.h): 7x7 planes over 8 images, stride 2 on odd
// sizes with 80 groups (two-vector blocks, the last shifted inwards), 5x5, explicit pads of
// 2 and 0 on one axis and 0 and 3 on the other with dilation 2, VALID, 28x28 exactly,
// batch 1 with 72 groups, float32 and float64, tensors aligned and one element into their
// storage; 3x3 at stride 2 on 20x20 dy positions, whose 28x28 take nxg_xp in float32.
// Past the rule's edges: a plane of 29x28, 48 groups, a 7x7 filter.
TEST(TfEdge, DepthwiseGroupTasksFilter) {
    const ScopedRegistryCpu other(RegistryCpu::kOther);  // (nxg_xp on Intel: DepthwisePlainXOnIntel)
    expect_filter_gradient_by(conv({8, 7, 7, 96}, {3, 3, 1, 96}, "SAME", 1, 1), "nxg_gt", 21);
    expect_filter_gradient_by(conv({2, 15, 13, 80}, {3, 3, 1, 80}, "SAME", 2, 2), "nxg_gt", 22);
    expect_filter_gradient_by(conv({3, 12, 11, 64}, {5, 5, 1, 64}, "SAME", 1, 1), "nxg_gt", 23);
    expect_filter_gradient_by(uneven_pads_dilated(conv({2, 20, 18, 72}, {3, 3, 1, 72}, "EXPLICIT", 1, 1)), "nxg_gt", 24);
    expect_filter_gradient_by(conv({2, 16, 18, 64}, {3, 3, 1, 64}, "VALID", 1, 1), "nxg_gt", 25);
    expect_filter_gradient_by(conv({2, 28, 28, 64}, {3, 3, 1, 64}, "SAME", 1, 1), "nxg_gt", 26);
    expect_filter_gradient_by(conv({1, 14, 14, 72}, {3, 3, 1, 72}, "SAME", 1, 1), "nxg_gt", 27);
    expect_filter_gradient_by(conv({2, 40, 40, 64}, {3, 3, 1, 64}, "SAME", 2, 2), "nxg_gt", 28);
    expect_filter_gradient_by(conv({2, 56, 56, 64}, {3, 3, 1, 64}, "SAME", 2, 2), "nxg_xp", 29, "nxg_gt");
    expect_kernel(conv({2, 29, 28, 64}, {3, 3, 1, 64}, "SAME", 1, 1), "bwd_weights_f32_nxg_xp");
    expect_kernel(conv({2, 14, 14, 48}, {3, 3, 1, 48}, "SAME", 1, 1), "bwd_weights_f32_nxg_xp");
    expect_kernel(conv({2, 14, 14, 64}, {7, 7, 1, 64}, "SAME", 1, 1), "bwd_weights_f32_nxg");
}

// NHWC depthwise data gradients with 3x3 filters, unit strides and dilations, and at least 64
// bytes of groups take nxg_ip (dy read in place through its zero padding, no staged rows;
// kernel_registry.h): odd sizes with 48 groups (vectors and a tail), VALID (dx past dy on
// every side), explicit pads of 2 and 0 on one axis and 0 and 3 on the other, batch 1 with
// 1040 groups on a 7x7 plane, 16 groups on 2x3 (dy smaller than the filter's reach),
// float32 (float64 through nxg), tensors aligned and one element into their storage. Past
// the rule's edges, on nxg: 8 groups (32 bytes), a 5x5 filter, dilation 2, stride 2 on odd
// sizes, a 3x1 filter.
TEST(TfEdge, DepthwiseInPlaceData) {
    const auto in_place = [](TfConv2D c, uint64_t seed) {
        expect_gradient_by(std::move(c), Direction::kBackwardData, "nxg_ip", seed, "nxg");
    };
    in_place(conv({2, 21, 19, 48}, {3, 3, 1, 48}, "SAME", 1, 1), 31);
    in_place(conv({2, 17, 23, 32}, {3, 3, 1, 32}, "VALID", 1, 1), 32);
    TfConv2D uneven = conv({2, 20, 18, 24}, {3, 3, 1, 24}, "EXPLICIT", 1, 1);
    uneven.explicit_paddings = {0, 0, 2, 0, 0, 3, 0, 0};
    in_place(uneven, 33);
    in_place(conv({1, 7, 7, 1040}, {3, 3, 1, 1040}, "SAME", 1, 1), 34);
    in_place(conv({3, 2, 3, 16}, {3, 3, 1, 16}, "SAME", 1, 1), 35);
    expect_kernel(conv({2, 24, 24, 8}, {3, 3, 1, 8}, "SAME", 1, 1), "bwd_data_f32_nxg");
    expect_kernel(conv({2, 24, 24, 32}, {5, 5, 1, 32}, "SAME", 1, 1), "bwd_data_f32_nxg");
    expect_kernel(uneven_pads_dilated(conv({2, 24, 24, 32}, {3, 3, 1, 32}, "EXPLICIT", 1, 1)), "bwd_data_f32_nxg");
    expect_kernel(conv({2, 25, 23, 32}, {3, 3, 1, 32}, "SAME", 2, 2), "bwd_data_f32_nxg");
    expect_kernel(conv({2, 24, 24, 32}, {3, 1, 1, 32}, "SAME", 1, 1), "bwd_data_f32_nxg");
}

// A flat-plane tap that crosses a row's end reads the neighbouring row's pixel, and the
// data gradient's kernel selects it away: an infinity there must not reach the sums it does
// not belong to (as NaN, 0 * inf, had a 0/1 column mask multiplied it). An infinity in dy's
// first column for the data gradient; in x's last column for the filter gradient (ncg, whose
// staged rows have zero borders: the same must hold). (One in dy's border
// would meet the padding's zeros in the filter gradient, NaN in TF's and every other
// convgrad kernel's products alike.)
TEST(TfEdge, DepthwiseFlatPlanesRowEndsStayOut) {
    TfConv2D c = as_nchw(conv({2, 9, 20, 3}, {3, 3, 1, 3}, "SAME", 1, 1));
    ASSERT_TRUE(infer_out_backprop(c));
    expect_kernel(c, "bwd_data_f32_ncg_fp");
    expect_kernel(c, "bwd_weights_f32_ncg");
    Rng rng(5);
    auto x = random_values(num_elements(c.input), rng), w = random_values(num_elements(c.filter), rng);
    auto dy = random_values(num_elements(c.out_backprop), rng);
    auto dy_inf = dy;
    const int64_t width = 20, plane = 9 * width;
    // Image 0, channel 1, row 4.
    dy_inf[plane + 4 * width] = std::numeric_limits<double>::infinity();
    x[plane + 4 * width + width - 1] = std::numeric_limits<double>::infinity();
    for (bool input_grad : {true, false}) {
        SCOPED_TRACE(input_grad ? "backprop input" : "backprop filter");
        const auto ref = input_grad ? backprop_input(c, w, dy_inf) : backprop_filter(c, x, dy);
        const TfRunResult r = run_tf(c, input_grad, input_grad ? w : x, input_grad ? dy_inf : dy, false);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        expect_finite_sums_match(r.result, ref);
    }
}

// The Winograd kernels (nxc_wg: NHWC 2-D 3x3, unit strides and dilations, both activations'
// channels per group multiples of 32; ncx_wg the same in NCHW; float64's,
// OIHW filters and negative end pads in DtypeContract.WinogradPastDy*), both gradients:
// sizes that are not whole 4x4 tiles, VALID (no padding), explicit pads of 2 and 0, 2
// groups, 96 dx channels over 32 dy ones, 256 over 64 on 49 tiles; each in NHWC and NCHW.
// Their rounding error (the transforms' constants) stays within the direct kernels' 1e-5. Not
// taken: 40 dy channels, stride 2, dilation 2, 5x5 images (tiles of 8x8: 2.6x the work),
// 17x17 ones (20x20: 1.38x, where the direct kernels ran 1.0-1.5x faster; kernel_registry.h),
// a 512 x 512 filter (38 MB of transformed filter), 256 x 256 over 4 tiles (9.4 MB: past 64
// KB of transformed filter a tile for the data gradient, 128 KB of sums for the filter
// gradient; kernel_registry.h), which 108 tiles take for the filter gradient and 180 for both,
// and 96 x 32 over 4 tiles (110 KB a tile; the filter gradient takes it). (The rule of CPUs
// other than the Zen 5, on any host: the Zen 5's is WinogradBoundsOnZen5's.)
TEST(TfEdge, WinogradBothGradients) {
    const ScopedRegistryCpu other(RegistryCpu::kOther);
    TfConv2D explicit_pads = conv({1, 12, 12, 32}, {3, 3, 32, 32}, "EXPLICIT", 1, 1);
    explicit_pads.explicit_paddings = {0, 0, 2, 0, 0, 1, 0, 0};
    const std::vector<TfConv2D> cases = {conv({2, 14, 14, 64}, {3, 3, 64, 64}, "SAME", 1, 1),
                                         conv({1, 13, 11, 32}, {3, 3, 32, 96}, "SAME", 1, 1),
                                         conv({3, 12, 10, 32}, {3, 3, 32, 32}, "VALID", 1, 1),
                                         explicit_pads,
                                         conv({2, 8, 8, 64}, {3, 3, 32, 64}, "SAME", 1, 1),  // 2 groups
                                         conv({2, 7, 7, 96}, {3, 3, 96, 32}, "SAME", 1, 1),
                                         conv({1, 28, 28, 256}, {3, 3, 256, 64}, "SAME", 1, 1)};
    for (const TfConv2D &c : cases) {
        ASSERT_NO_FATAL_FAILURE(expect_kernel(c, "bwd_data_f32_nxc_wg"));
        ASSERT_NO_FATAL_FAILURE(expect_kernel(c, "bwd_weights_f32_nxc_wg"));
        expect_matches_reference(c, 23);
        const TfConv2D nchw = as_nchw(c);
        ASSERT_NO_FATAL_FAILURE(expect_kernel(nchw, "bwd_data_f32_ncx_wg"));
        ASSERT_NO_FATAL_FAILURE(expect_kernel(nchw, "bwd_weights_f32_ncx_wg"));
        expect_matches_reference(nchw, 23);
    }
    // Few tiles for their filter: the data gradient direct, the filter gradient Winograd
    // (96 x 32) or direct too (256 x 256).
    for (const TfConv2D &nhwc : {conv({1, 7, 7, 96}, {3, 3, 96, 32}, "SAME", 1, 1),
                                 conv({1, 8, 8, 256}, {3, 3, 256, 256}, "SAME", 1, 1)}) {
        const bool wide = nhwc.filter[3] == 256;
        for (const TfConv2D &c : {nhwc, as_nchw(nhwc)}) {
            const std::string layout = c.data_format == "NCHW" ? "ncx" : "nxc";
            ASSERT_NO_FATAL_FAILURE(expect_kernel(c, "bwd_data_f32_" + layout + "_cs"));
            const std::string direct = layout == "ncx" ? "bwd_weights_f32_ncx" : nxc_filter_kernel(c);
            ASSERT_NO_FATAL_FAILURE(expect_kernel(c, wide ? direct : "bwd_weights_f32_" + layout + "_wg"));
        }
    }
    TfConv2D dilated = conv({1, 12, 12, 64}, {3, 3, 64, 64}, "SAME", 1, 1);
    dilated.dilations = {1, 2, 2, 1};
    const std::vector<std::pair<TfConv2D, std::string>> others = {
        {conv({1, 8, 8, 64}, {3, 3, 64, 40}, "SAME", 1, 1), "nxc_cs"},
        {conv({1, 8, 8, 64}, {3, 3, 64, 64}, "SAME", 2, 2), "nxc_s2"},
        {dilated, "nxc_cs"},
        {as_nchw(conv({1, 8, 8, 64}, {3, 3, 64, 40}, "SAME", 1, 1)), "ncx_cs"},
        {conv({1, 5, 5, 64}, {3, 3, 64, 64}, "SAME", 1, 1), "nxc_cs"},
        {conv({1, 17, 17, 64}, {3, 3, 64, 64}, "SAME", 1, 1), "nxc_cs"},
        {conv({1, 4, 4, 512}, {3, 3, 512, 512}, "SAME", 1, 1), "nxc_cs"}};
    for (const auto &[c, data_kernel] : others) {
        expect_kernel(c, "bwd_data_f32_" + data_kernel);
        const bool nchw = data_kernel.rfind("ncx", 0) == 0;
        expect_kernel(c, nchw ? "bwd_weights_f32_ncx" : nxc_filter_kernel(c));
    }
    const TfConv2D many_tiles = conv({3, 24, 24, 256}, {3, 3, 256, 256}, "SAME", 1, 1);  // 108 tiles
    expect_kernel(many_tiles, "bwd_weights_f32_nxc_wg");
    expect_kernel(as_nchw(many_tiles), "bwd_weights_f32_ncx_wg");
    expect_kernel(many_tiles, "bwd_data_f32_nxc_cs");
    const TfConv2D more_tiles = conv({5, 24, 24, 256}, {3, 3, 256, 256}, "SAME", 1, 1);  // 180
    expect_kernel(more_tiles, "bwd_data_f32_nxc_wg");
    expect_kernel(as_nchw(more_tiles), "bwd_data_f32_ncx_wg");
}

// On a Zen 5 the Winograd filter gradient takes at most 90 KB of sums a tile of dy, not 128
// KB, and the data gradient over 104 tiles or more, reading whole vectors, at most 160 KB of
// transformed filter a tile of dx, not 64 (kernel_registry.h; 256 x 256 channels: 9.4 MB).
// Filter gradients: 16x17 planes over 4 images (80 tiles, 118 KB a tile), DeepLab's 33x33
// layer dilated by 2 (its first phase 17x16) and 96 x 32 channels on 7x7 (4 tiles, 110 KB)
// run direct there and Winograd on other CPUs; 24x24 over 3 images (108 tiles, 87 KB)
// Winograd on both. Data gradients: 24x24 over 3 (87 KB) and 14x14 over 8 (128 tiles, 73
// KB, and its NCHW form) take Winograd there and the direct nxc_cs elsewhere; 14x14 over 4
// (64 tiles), 7x7 images (4 tiles each: 128 channels over 8, 256 over 32) and DeepLab's layer (phases of
// 64-100 tiles, dilated whole; in NCHW rows of every other pixel) nxc_cs / ncx_cs on both.
// Under the 64 KB bound, images of fewer than 16 tiles on a Zen 5 take Winograd only where
// their tiles cover at most 1.25x their positions: 7x7 with 64 channels over 8 images (18 KB
// a tile; 1.31x) direct there and Winograd elsewhere, in both layouts; 11x11 (1.19x) and 8x8
// (whole tiles), 128 channels over 16 images, Winograd on every CPU.
TEST(TfEdge, WinogradBoundsOnZen5) {
    TfConv2D deeplab = conv({4, 33, 33, 256}, {3, 3, 256, 256}, "SAME", 1, 1);
    deeplab.dilations = {1, 2, 2, 1};
    const TfConv2D few_tiles = conv({4, 16, 17, 256}, {3, 3, 256, 256}, "SAME", 1, 1);
    const TfConv2D many_tiles = conv({3, 24, 24, 256}, {3, 3, 256, 256}, "SAME", 1, 1);
    const TfConv2D narrow = conv({1, 7, 7, 96}, {3, 3, 96, 32}, "SAME", 1, 1);
    const TfConv2D resnet = conv({8, 14, 14, 256}, {3, 3, 256, 256}, "SAME", 1, 1);
    const TfConv2D two_images = conv({2, 14, 14, 256}, {3, 3, 256, 256}, "SAME", 1, 1);
    const TfConv2D four_images = conv({4, 14, 14, 256}, {3, 3, 256, 256}, "SAME", 1, 1);
    const TfConv2D small_planes = conv({8, 7, 7, 128}, {3, 3, 128, 128}, "SAME", 1, 1);
    const TfConv2D small_planes_many = conv({32, 7, 7, 256}, {3, 3, 256, 256}, "SAME", 1, 1);  // 128 tiles
    const TfConv2D small_planes_narrow = conv({8, 7, 7, 64}, {3, 3, 64, 64}, "SAME", 1, 1);
    const TfConv2D planes_11 = conv({16, 11, 11, 128}, {3, 3, 128, 128}, "SAME", 1, 1);
    const TfConv2D planes_8 = conv({16, 8, 8, 128}, {3, 3, 128, 128}, "SAME", 1, 1);
    for (const RegistryCpu cpu : {RegistryCpu::kOther, RegistryCpu::kIntel, RegistryCpu::kZen5}) {
        const ScopedRegistryCpu pinned(cpu);
        const bool zen5 = cpu == RegistryCpu::kZen5;
        for (const TfConv2D &c : {few_tiles, deeplab, narrow}) {
            ASSERT_NO_FATAL_FAILURE(expect_kernel(c, zen5 ? nxc_filter_kernel(c) : "bwd_weights_f32_nxc_wg"));
        }
        ASSERT_NO_FATAL_FAILURE(expect_kernel(many_tiles, "bwd_weights_f32_nxc_wg"));
        for (const TfConv2D &c : {many_tiles, resnet}) {
            ASSERT_NO_FATAL_FAILURE(expect_kernel(c, zen5 ? "bwd_data_f32_nxc_wg" : "bwd_data_f32_nxc_cs"));
        }
        ASSERT_NO_FATAL_FAILURE(expect_kernel(as_nchw(resnet), zen5 ? "bwd_data_f32_ncx_wg" : "bwd_data_f32_ncx_cs"));
        for (const TfConv2D &c : {two_images, four_images, small_planes, small_planes_many, deeplab}) {
            ASSERT_NO_FATAL_FAILURE(expect_kernel(c, "bwd_data_f32_nxc_cs"));
        }
        ASSERT_NO_FATAL_FAILURE(expect_kernel(as_nchw(deeplab), "bwd_data_f32_ncx_cs"));
        ASSERT_NO_FATAL_FAILURE(expect_kernel(small_planes_narrow, zen5 ? "bwd_data_f32_nxc_cs" : "bwd_data_f32_nxc_wg"));
        ASSERT_NO_FATAL_FAILURE(
            expect_kernel(as_nchw(small_planes_narrow), zen5 ? "bwd_data_f32_ncx_cs" : "bwd_data_f32_ncx_wg"));
        for (const TfConv2D &c : {planes_11, planes_8}) {
            ASSERT_NO_FATAL_FAILURE(expect_kernel(c, "bwd_data_f32_nxc_wg"));
        }
    }
}

// Dilated gradients with unit strides whose dilation phases (dilation_phases.cpp: undilated
// problems over views of every d-th position) take a Winograd kernel run as those phases
// (the filter gradient's each a whole dw, added):
// dilation 2 with SAME padding (phases of 17 and 16, under the phases' laxer bound of whole
// tiles: kernel_registry.h), VALID, explicit uneven pads, dilation
// 3, dilation along one axis, and dy shorter than the dilation along an axis (a phase of dx
// that reads no dy: zeros); a phase too small for whole tiles (a direct kernel for it in
// NHWC; in NCHW the whole call dilated). Both layouts' results against the reference; NCHW's phases
// (rows of every other pixel) take ncx_wg for the data gradient, while the filter
// gradient's, whose copies would gather, run dilated. (The rule of CPUs other than the Zen 5,
// on any host: there the phases of fewer than 16 tiles that overcompute go direct.)
TEST(TfEdge, DilatedGradientPhases) {
    const ScopedRegistryCpu other(RegistryCpu::kOther);
    const auto dilated = [](TfConv2D c, int64_t dh, int64_t dw) {
        c.dilations = {1, dh, dw, 1};
        return c;
    };
    TfConv2D uneven = conv({1, 37, 35, 32}, {3, 3, 32, 64}, "EXPLICIT", 1, 1);
    uneven.explicit_paddings = {0, 0, 3, 1, 0, 2, 0, 0};
    const std::vector<TfConv2D> phased = {dilated(conv({2, 33, 33, 32}, {3, 3, 32, 32}, "SAME", 1, 1), 2, 2),
                                          dilated(conv({1, 30, 26, 32}, {3, 3, 32, 64}, "VALID", 1, 1), 2, 2),
                                          dilated(uneven, 2, 2),
                                          dilated(conv({1, 36, 36, 64}, {3, 3, 64, 32}, "SAME", 1, 1), 3, 3),
                                          dilated(conv({1, 17, 34, 32}, {3, 3, 32, 32}, "SAME", 1, 1), 1, 2)};
    for (const TfConv2D &c : phased) {
        ASSERT_NO_FATAL_FAILURE(expect_kernel(c, "bwd_data_f32_nxc_wg"));
        ASSERT_NO_FATAL_FAILURE(expect_kernel(c, "bwd_weights_f32_nxc_wg"));
        expect_matches_reference(c, 31);
        ASSERT_NO_FATAL_FAILURE(expect_kernel(as_nchw(c), "bwd_data_f32_ncx_wg"));
        ASSERT_NO_FATAL_FAILURE(expect_kernel(as_nchw(c), "bwd_weights_f32_ncx"));
        expect_matches_reference(as_nchw(c), 31);
    }
    // dy of 2 rows under dilation 3: dx's third phase of rows reads none (zeros); the filter
    // gradient's phases, dy rows of 1, would be tiles of 4 rows: dilated.
    const TfConv2D two_rows = dilated(conv({1, 8, 32, 32}, {3, 3, 32, 32}, "VALID", 1, 1), 3, 1);
    ASSERT_NO_FATAL_FAILURE(expect_kernel(two_rows, "bwd_data_f32_nxc_wg"));
    expect_matches_reference(two_rows, 31);
    // The same pads on 21 x 19: one phase's tiles would cover 1.6x its dx. In NHWC that phase
    // takes nxc_cs over its views (the first phase, the kernel reported, is Winograd); in
    // NCHW it would take the scalar `any`, so the whole call runs dilated.
    TfConv2D mixed = dilated(uneven, 2, 2);
    mixed.input = {1, 21, 19, 32};
    ASSERT_NO_FATAL_FAILURE(expect_kernel(mixed, "bwd_data_f32_nxc_wg"));
    expect_matches_reference(mixed, 31);
    ASSERT_NO_FATAL_FAILURE(expect_kernel(as_nchw(mixed), "bwd_data_f32_ncx_cs"));
    expect_matches_reference(as_nchw(mixed), 31);
    // Phases of 6 x 6: tiles of 8 x 8 (1.8x the work), the dilated kernel.
    expect_kernel(dilated(conv({1, 12, 12, 64}, {3, 3, 64, 64}, "SAME", 1, 1), 2, 2), "bwd_data_f32_nxc_cs");
}

// NHWC filter gradients over few positions (at most kWholeReductionMaxPositions dy positions
// over all images) with an XIO filter and a tile's channels per group (8 of x, 32 of dy)
// take nxc_wr: each tile sums every position in registers and stores into dw, no partial
// sums. Ragged tiles (12 x channels: a partial block of 8; 40 dy channels: the last tile
// shifted inwards), strides, uneven padding with dilation, groups of 8 x 32 channels, and a
// dw of 4 MB (streamed) match the reference; float64 has no such variant (nxc). The rule's
// edges name the kernels on either side.
TEST(TfEdge, WholeReductionFilterGradient) {
    expect_filter_gradient_by(conv({1, 7, 7, 64}, {1, 1, 64, 96}, "VALID", 1, 1), "nxc_wr", 31, "nxc");
    expect_filter_gradient_by(conv({2, 5, 6, 12}, {3, 3, 12, 40}, "SAME", 1, 1), "nxc_wr", 32, "nxc");
    expect_filter_gradient_by(conv({1, 9, 11, 16}, {3, 3, 16, 32}, "SAME", 2, 2), "nxc_wr", 33, "nxc");
    expect_filter_gradient_by(uneven_pads_dilated(conv({1, 9, 10, 24}, {3, 3, 24, 48}, "EXPLICIT", 1, 1)), "nxc_wr", 34,
                              "nxc");
    expect_filter_gradient_by(conv({2, 6, 6, 16}, {3, 3, 8, 64}, "SAME", 1, 1), "nxc_wr", 35, "nxc");  // 2 groups
    expect_filter_gradient_by(conv({1, 4, 4, 1024}, {1, 1, 1024, 1024}, "VALID", 1, 1), "nxc_wr", 36, "nxc");
    // 512 positions, and one row more; 7 x channels; 31 dy channels.
    expect_kernel(conv({2, 16, 16, 8}, {1, 1, 8, 32}, "VALID", 1, 1), "bwd_weights_f32_nxc_wr");
    expect_kernel(conv({2, 16, 17, 8}, {1, 1, 8, 32}, "VALID", 1, 1), "bwd_weights_f32_nxc");
    expect_kernel(conv({2, 16, 16, 7}, {1, 1, 7, 32}, "VALID", 1, 1), "bwd_weights_f32_nxc");
    expect_kernel(conv({2, 16, 16, 8}, {1, 1, 8, 31}, "VALID", 1, 1), "bwd_weights_f32_nxc");
    // An OIX filter (oneDNN's): dw's co not contiguous, nxc.
    TfConv2D c = conv({1, 7, 7, 64}, {1, 1, 64, 96}, "VALID", 1, 1);
    ASSERT_TRUE(infer_out_backprop(c));
    Result<ConvProblem> p = tf_problem(c, false, DType::kFloat32);
    ASSERT_TRUE(p.is_ok()) << p.status.message();
    EXPECT_EQ(routed_kernel(p.value, Direction::kBackwardWeights), kernel_on_this_path("bwd_weights_f32_nxc_wr"));
    p.value.filter_layout = FilterLayout::kOIX;
    EXPECT_EQ(routed_kernel(p.value, Direction::kBackwardWeights), "bwd_weights_f32_nxc");
}

}  // namespace
}  // namespace convgrad::test
