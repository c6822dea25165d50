// The dense NHWC filter gradient's prefetch of its next chunk's rows of dy
// (generators/next_chunk_prefetch.h): pointwise layers with dy of at least 8 MiB run the
// tiles' prefetching loops (the other layers, the plain ones, are every other test's). Each
// problem runs on tensors aligned as frameworks allocate them and one element into their
// storage, against the float64 reference: 64 -> 256 channels (the ci blocks the prefetch
// splits a row among: 8 on AVX-512 f32), ragged channel counts (40 -> 96, whose last blocks
// are partial), a 1x1 stride-2 projection, and float64. Whether the kernel holds the
// prefetches is CMakeLists.txt's objdump test.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test_util.h"

namespace convgrad::test {
namespace {

struct Case {
    std::vector<int64_t> input, filter;  // NHWC, TF's filter [1, 1, C_in, C_out]
    int64_t stride;
    DType dtype;
};

void expect_prefetched_result_matches(const Case &k) {
    TfConv2D c;
    c.input = k.input, c.filter = k.filter, c.padding = "VALID";
    c.strides = {1, k.stride, k.stride, 1};
    ASSERT_TRUE(infer_out_backprop(c));
    SCOPED_TRACE(describe(c));
    const int64_t dy_bytes = num_elements(c.out_backprop) * dtype_size(k.dtype);
    ASSERT_GE(dy_bytes, int64_t(8) << 20) << "dy must be large enough to prefetch";
    tf::ConvAttrs attrs{c.strides, c.dilations, c.padding, c.explicit_paddings, c.data_format};
    Result<ConvProblem> p = tf::conv2d_backprop_filter(attrs, c.input, c.filter, c.out_backprop, k.dtype);
    ASSERT_TRUE(p.is_ok()) << p.status.message();
    Rng rng(13);
    const auto x = random_values(num_elements(c.input), rng);
    const auto dy = random_values(num_elements(c.out_backprop), rng);
    const auto ref = backprop_filter(c, x, dy);
    const double tolerance = k.dtype == DType::kFloat64 ? 1e-12 : 1e-5;
    expect_matches_at_offsets(p.value, Direction::kBackwardWeights, x, dy, ref, tolerance);
}

TEST(NextChunkPrefetch, LargePointwiseFilterGradients) {
    const DType f32 = DType::kFloat32, f64 = DType::kFloat64;
    std::vector<Case> cases = {
        {{2, 72, 72, 64}, {1, 1, 64, 256}, 1, f32},    // dy 10.1 MiB
        {{4, 75, 75, 40}, {1, 1, 40, 96}, 1, f32},     // ragged blocks, dy 8.2 MiB
        {{3, 112, 112, 64}, {1, 1, 64, 256}, 2, f32},  // stride 2, dy 9.2 MiB
        {{1, 72, 72, 64}, {1, 1, 64, 256}, 1, f64},    // float64, dy 10.1 MiB
    };
    // Under qemu (the other ISA paths; emulation is ~100x slower, and the float64 reference
    // of the cases above would take minutes): one case with few input channels.
    if (std::getenv("CONVGRAD_TEST_CASES")) cases = {{{2, 66, 66, 8}, {1, 1, 8, 256}, 1, f32}};  // dy 8.5 MiB
    for (const Case &k : cases) expect_prefetched_result_matches(k);
}

}  // namespace
}  // namespace convgrad::test
