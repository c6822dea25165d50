// The next tile's dy prefetched (generators/next_tile_prefetch.h): with dy of at least 8 MiB,
// the first tiles over each chunk (filter gradient: first ci block and tap) or block of
// pixels (pointwise data gradient: first block of dx channels) run prefetching loops (the
// other layers' plain ones are every other test's). Each problem runs on tensors aligned as
// frameworks allocate them and one element into their storage, against the float64
// reference, on the kernel named (a test of the registry's choice too).
// Filter gradients: NHWC (nxc: the next co block's lines of each pixel) 64 -> 256 channels,
// ragged channel counts (40 -> 96: partial last blocks, the last co block's prefetch past
// the pixel), a 1x1 stride-2 projection (nxc_xp: x staged plainly), a 2x2 filter (only the first tap prefetches),
// float64; NCHW (ncx_db: dy's channels broadcast, the next co block's rows) 64 -> 256,
// ragged, float64. Pointwise data gradients: NHWC (nxc_pw: dy's pixels broadcast, the next
// block's pixels) 256 -> 64 and 256 -> 128 (two blocks of dx channels), float64; NCHW
// (ncx_px_pw: vectors of a row's pixels, the next block's) 256 -> 64, ragged, float64.
// Whether the kernels hold the prefetches is CMakeLists.txt's objdump test.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test_util.h"

namespace convgrad::test {
namespace {

struct Case {
    std::vector<int64_t> input, filter;  // NHWC, TF's filter [KH, KW, C_in, C_out]
    int64_t stride;
    DType dtype;
    bool nchw;
    std::string kernel;  // the registry's choice; bwd_data_*: the data gradient
};

void expect_prefetched_result_matches(const Case &k) {
    TfConv2D c = conv(k.input, k.filter, "VALID", k.stride, k.stride);
    if (k.nchw) c = as_nchw(c);
    ASSERT_TRUE(infer_out_backprop(c));
    SCOPED_TRACE(describe(c));
    const int64_t dy_bytes = num_elements(c.out_backprop) * dtype_size(k.dtype);
    ASSERT_GT(dy_bytes, int64_t(8) << 20) << "dy must be large enough to prefetch";
    const bool data = k.kernel.rfind("bwd_data", 0) == 0;
    const Direction d = data ? Direction::kBackwardData : Direction::kBackwardWeights;
    tf::ConvAttrs attrs{c.strides, c.dilations, c.padding, c.explicit_paddings, c.data_format};
    Result<ConvProblem> p = data ? tf::conv2d_backprop_input(attrs, c.input, c.filter, c.out_backprop, k.dtype)
                                 : tf::conv2d_backprop_filter(attrs, c.input, c.filter, c.out_backprop, k.dtype);
    ASSERT_TRUE(p.is_ok()) << p.status.message();
    Rng rng(13);
    const auto first = random_values(num_elements(data ? c.filter : c.input), rng);  // w or x
    const auto dy = random_values(num_elements(c.out_backprop), rng);
    const auto ref = data ? backprop_input(c, first, dy) : backprop_filter(c, first, dy);
    const double tolerance = k.dtype == DType::kFloat64 ? 1e-12 : 1e-5;
    // (run_problem takes the data gradient's dy first.)
    const std::vector<double> &a = data ? dy : first, &b = data ? first : dy;
    expect_matches_at_offsets(p.value, d, a, b, ref, tolerance, k.kernel);
}

TEST(NextTilePrefetch, GradientsOfLargeDy) {
    const DType f32 = DType::kFloat32, f64 = DType::kFloat64;
    std::vector<Case> cases = {
        {{2, 72, 72, 64}, {1, 1, 64, 256}, 1, f32, false, "bwd_weights_f32_nxc"},    // dy 10.1 MiB
        {{4, 75, 75, 40}, {1, 1, 40, 96}, 1, f32, false, "bwd_weights_f32_nxc"},     // ragged blocks, dy 8.2 MiB
        {{3, 112, 112, 64}, {1, 1, 64, 256}, 2, f32, false, "bwd_weights_f32_nxc_xp"},  // stride 2, dy 9.2 MiB (x 9.2 MiB, 64 products per element: plain x)
        {{2, 131, 131, 16}, {2, 2, 16, 64}, 1, f32, false, "bwd_weights_f32_nxc"},   // 2x2 taps, dy 8.3 MiB
        {{1, 72, 72, 64}, {1, 1, 64, 256}, 1, f64, false, "bwd_weights_f64_nxc"},    // float64, dy 10.1 MiB
        {{2, 72, 72, 64}, {1, 1, 64, 256}, 1, f32, true, "bwd_weights_f32_ncx_db"},  // NCHW
        {{4, 75, 75, 40}, {1, 1, 40, 96}, 1, f32, true, "bwd_weights_f32_ncx_db"},   // NCHW ragged
        {{1, 72, 72, 64}, {1, 1, 64, 256}, 1, f64, true, "bwd_weights_f64_ncx_db"},  // NCHW float64
        {{2, 72, 72, 64}, {1, 1, 64, 256}, 1, f32, false, "bwd_data_f32_nxc_pw"},     // 256 -> 64
        {{2, 66, 66, 128}, {1, 1, 128, 256}, 1, f32, false, "bwd_data_f32_nxc_pw"},   // two dx blocks, 8.5 MiB
        {{1, 72, 72, 64}, {1, 1, 64, 256}, 1, f64, false, "bwd_data_f64_nxc_pw"},     // float64
        {{2, 72, 72, 64}, {1, 1, 64, 256}, 1, f32, true, "bwd_data_f32_ncx_px_pw"},   // NCHW
        {{4, 75, 75, 40}, {1, 1, 40, 96}, 1, f32, true, "bwd_data_f32_ncx_px_pw"},    // NCHW ragged
        {{1, 72, 72, 64}, {1, 1, 64, 256}, 1, f64, true, "bwd_data_f64_ncx_px_pw"},   // NCHW float64
    };
    // Under qemu (the other ISA paths; emulation is ~100x slower, and the float64 reference
    // of the cases above would take minutes): one case of each kernel with few channels.
    if (std::getenv("CONVGRAD_TEST_CASES")) {
        cases = {{{2, 66, 66, 8}, {1, 1, 8, 256}, 1, f32, false, "bwd_weights_f32_nxc"},  // dy 8.5 MiB
                 {{2, 66, 66, 32}, {1, 1, 32, 256}, 1, f32, true, "bwd_weights_f32_ncx_db"},
                 {{2, 66, 66, 64}, {1, 1, 64, 256}, 1, f32, false, "bwd_data_f32_nxc_pw"},
                 {{2, 66, 66, 8}, {1, 1, 8, 256}, 1, f32, true, "bwd_data_f32_ncx_px_pw"}};
    }
    for (const Case &k : cases) expect_prefetched_result_matches(k);
}

}  // namespace
}  // namespace convgrad::test
