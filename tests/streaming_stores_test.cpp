// The data gradients' streaming stores (generators/streaming_stores.h): channels-last outputs
// of at least 4 MiB are written past the caches where a vector's address is aligned. Each
// problem runs on tensors aligned as frameworks allocate them (the streaming path) and one
// element into their storage (no vector aligned: every store plain; a streaming store there
// would fault), against the float64 reference: depthwise NHWC, stride 2 (the x-phase view),
// dense NHWC, float64, and NCHW (not streamed: plain stores through the transposing copy of
// dx's rows).
#include <gtest/gtest.h>

#include "test_util.h"

namespace convgrad::test {
namespace {

struct Case {
    std::vector<int64_t> input, filter;  // NHWC order, TF's filter [KH, KW, C_in/G, C_out]
    int64_t stride;
    bool nchw;
    DType dtype;
};

void expect_streamed_result_matches(const Case &k) {
    TfConv2D c = conv(k.input, k.filter, "SAME", k.stride, k.stride);
    if (k.nchw) c = as_nchw(c);
    ASSERT_TRUE(infer_out_backprop(c));
    SCOPED_TRACE(describe(c));
    const int64_t dx_bytes = num_elements(c.input) * dtype_size(k.dtype);
    ASSERT_GE(dx_bytes, int64_t(4) << 20) << "the output must be large enough to stream";
    tf::ConvAttrs attrs{c.strides, c.dilations, c.padding, c.explicit_paddings, c.data_format};
    Result<ConvProblem> p = tf::conv2d_backprop_input(attrs, c.input, c.filter, c.out_backprop, k.dtype);
    ASSERT_TRUE(p.is_ok()) << p.status.message();
    Rng rng(11);
    const auto w = random_values(num_elements(c.filter), rng);
    const auto dy = random_values(num_elements(c.out_backprop), rng);
    const auto ref = backprop_input(c, w, dy);
    const double tolerance = k.dtype == DType::kFloat64 ? 1e-12 : 1e-5;
    expect_matches_at_offsets(p.value, Direction::kBackwardData, dy, w, ref, tolerance);
}

TEST(StreamingStores, LargeDataGradients) {
    const DType f32 = DType::kFloat32, f64 = DType::kFloat64;
    for (const Case &k : {
             Case{{1, 130, 130, 64}, {3, 3, 1, 64}, 1, false, f32},  // depthwise NHWC (nxg)
             Case{{1, 130, 130, 64}, {3, 3, 1, 64}, 1, true, f32},   // depthwise NCHW
             Case{{1, 130, 130, 64}, {3, 3, 1, 64}, 2, false, f32},  // stride 2: x phases
             Case{{1, 128, 128, 64}, {3, 3, 64, 4}, 1, false, f32},  // dense NHWC
             Case{{1, 92, 92, 64}, {3, 3, 1, 64}, 1, false, f64},    // float64 (4.1 MiB)
         }) {
        expect_streamed_result_matches(k);
    }
}

}  // namespace
}  // namespace convgrad::test
