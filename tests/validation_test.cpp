// Every validation rule: bad input gives the right status code and a message naming the
// offending argument, never a crash.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace convgrad::test {
namespace {

struct TfCall {
    tf::ConvAttrs attrs{{1, 1, 1, 1}, {1, 1, 1, 1}, "SAME", {}, "NHWC"};
    Shape input{2, 6, 6, 4}, filter{3, 3, 4, 8}, out_backprop{2, 6, 6, 8};
    bool depthwise = false;

    Result<ConvProblem> input_grad() const {
        return (depthwise ? tf::depthwise_conv2d_backprop_input : tf::conv2d_backprop_input)(
            attrs, input, filter, out_backprop, DType::kFloat32);
    }
    Result<ConvProblem> filter_grad() const {
        return (depthwise ? tf::depthwise_conv2d_backprop_filter : tf::conv2d_backprop_filter)(
            attrs, input, filter, out_backprop, DType::kFloat32);
    }
};

// Both ops reject the call with `code`, and the message contains `needle`.
void expect_rejected(const TfCall &c, const std::string &needle, StatusCode code = StatusCode::kInvalidArgument) {
    for (const auto &r : {c.input_grad(), c.filter_grad()}) {
        ASSERT_FALSE(r.is_ok()) << "accepted; expected an error mentioning '" << needle << "'";
        EXPECT_EQ(r.status.code(), code);
        EXPECT_NE(r.status.message().find(needle), std::string::npos) << r.status.message();
    }
}

TEST(Validation, BaselineCallIsValid) {
    TfCall c;
    EXPECT_TRUE(c.input_grad().is_ok());
    EXPECT_TRUE(c.filter_grad().is_ok());
}

TEST(Validation, Strides) {
    TfCall c;
    c.attrs.strides = {1, 1, 1};
    expect_rejected(c, "strides: must have 4 entries");
    c.attrs.strides = {1, 0, 1, 1};
    expect_rejected(c, "strides: every entry must be >= 1");
    c.attrs.strides = {2, 1, 1, 1};
    expect_rejected(c, "strides: batch and channel");
    c.attrs.strides = {1, 1, 1, 2};
    expect_rejected(c, "strides: batch and channel");
}

TEST(Validation, Dilations) {
    TfCall c;
    c.attrs.dilations = {1, 1, 1, 1, 1};
    expect_rejected(c, "dilations: must have 4 entries");
    c.attrs.dilations = {1, -1, 1, 1};
    expect_rejected(c, "dilations: every entry must be >= 1");
    c.attrs.dilations = {1, 1, 1, 2};
    expect_rejected(c, "dilations: batch and channel");
}

TEST(Validation, Padding) {
    TfCall c;
    c.attrs.padding = "same";
    expect_rejected(c, "padding: must be SAME, VALID or EXPLICIT");
    c.attrs.padding = "";
    expect_rejected(c, "padding:");
    c.attrs.padding = "EXPLICIT";
    expect_rejected(c, "explicit_paddings: must have 8 entries");
    c.attrs.explicit_paddings = {0, 0, 1, 1, 1, -1, 0, 0};
    expect_rejected(c, "explicit_paddings: entries must be >= 0");
    c.attrs.explicit_paddings = {0, 1, 1, 1, 1, 1, 0, 0};
    expect_rejected(c, "explicit_paddings: batch and channel");
    c.attrs.padding = "SAME";
    c.attrs.explicit_paddings = {0, 0, 1, 1, 1, 1, 0, 0};
    expect_rejected(c, "explicit_paddings: must be empty");
}

TEST(Validation, DataFormat) {
    TfCall c;
    c.attrs.data_format = "NWHC";
    expect_rejected(c, "data_format: must be NHWC or NCHW");
}

TEST(Validation, Ranks) {
    TfCall c;
    c.filter = {3, 3, 4};
    expect_rejected(c, "must be 4-D");
    c = TfCall();
    c.out_backprop = {2, 6, 6};
    expect_rejected(c, "out_backprop: must be 4-D");
    c = TfCall();
    c.input = {2, 6, 6, -4};
    expect_rejected(c, "negative dimension");
}

TEST(Validation, InputSizesCount) {
    TfCall c;
    auto r = tf::conv2d_backprop_input(c.attrs, {2, 6, 6}, c.filter, c.out_backprop, DType::kFloat32);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status.message().find("input_sizes: must have 4 entries (or 2"), std::string::npos);
}

TEST(Validation, BatchMismatch) {
    TfCall c;
    c.out_backprop = {3, 6, 6, 8};
    expect_rejected(c, "out_backprop: batch size 3 does not match");
}

TEST(Validation, ChannelRules) {
    TfCall c;
    c.filter = {3, 3, 3, 8};  // 4 input channels are not a multiple of 3
    expect_rejected(c, "must be a multiple of");
    c.filter = {3, 3, 2, 7};  // 2 groups, 7 output channels
    c.out_backprop = {2, 6, 6, 7};
    expect_rejected(c, "out-depth 7 must be a multiple of the number of groups 2");
    c = TfCall();
    c.out_backprop = {2, 6, 6, 9};
    expect_rejected(c, "out_backprop: depth 9 does not match");
    c = TfCall();
    c.input = {2, 6, 6, 0};
    c.out_backprop = {2, 6, 6, 8};
    expect_rejected(c, "channel counts must be >= 1");
}

TEST(Validation, DepthwiseChannels) {
    TfCall c;
    c.depthwise = true;
    c.filter = {3, 3, 4, 2};
    EXPECT_TRUE(c.input_grad().is_ok());
    c.filter = {3, 3, 2, 2};
    c.out_backprop = {2, 6, 6, 4};
    expect_rejected(c, "in-depth 2 must equal the input depth 4");
    c.filter = {3, 3, 4, 2};
    c.out_backprop = {2, 6, 6, 4};
    expect_rejected(c, "out_backprop: depth 4 does not match the filter's output depth 8");
}

TEST(Validation, SpatialSizes) {
    TfCall c;
    c.out_backprop = {2, 5, 6, 8};
    expect_rejected(c, "out_backprop: size of spatial dim 0 is 5, doesn't match computed 6");
    c = TfCall();
    c.attrs.padding = "VALID";
    c.input = {2, 1, 6, 4};  // VALID, input 1, kernel 3: (1 - 3 + 1) / 1 = -1
    c.out_backprop = {2, 0, 4, 8};
    expect_rejected(c, "computed output size would be negative");
    c = TfCall();
    c.filter = {0, 3, 4, 8};
    expect_rejected(c, "spatial sizes must be >= 1");
}

// Execution-time checks on the tensors handed to backward_data / backward_weights.
class ExecuteValidation : public ::testing::Test {
protected:
    void SetUp() override {
        TfCall c;
        auto r = c.input_grad();
        ASSERT_TRUE(r.is_ok());
        p = r.value;
        Rng rng(5);
        dy.fill(random_values(dy.tensor.num_elements(), rng));
        w.fill(random_values(w.tensor.num_elements(), rng));
        dx.poison();
    }
    ConvProblem p;
    HostTensor dy{{2, 6, 6, 8}, false}, w{{3, 3, 4, 8}, false}, dx{{2, 6, 6, 4}, false};
};

TEST_F(ExecuteValidation, Succeeds) { EXPECT_TRUE(backward_data(p, dy.tensor, w.tensor, dx.tensor).is_ok()); }

TEST_F(ExecuteValidation, ShapeMismatch) {
    Tensor bad = dx.tensor;
    bad.shape = {2, 6, 6, 5};
    Status s = backward_data(p, dy.tensor, w.tensor, bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("dx: shape [2, 6, 6, 5] does not match the expected [2, 6, 6, 4]"), std::string::npos)
        << s.message();
}

TEST_F(ExecuteValidation, DtypeMismatch) {
    Tensor bad = w.tensor;
    bad.dtype = DType::kFloat64;
    Status s = backward_data(p, dy.tensor, bad, dx.tensor);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("w: dtype float64"), std::string::npos) << s.message();
}

TEST_F(ExecuteValidation, NullDataAndBadStrides) {
    Tensor null_dy = dy.tensor;
    null_dy.data = nullptr;
    EXPECT_NE(backward_data(p, null_dy, w.tensor, dx.tensor).message().find("dy: data is null"), std::string::npos);
    Tensor short_strides = dy.tensor;
    short_strides.strides = {1, 2};
    EXPECT_NE(backward_data(p, short_strides, w.tensor, dx.tensor).message().find("dy: 2 strides"), std::string::npos);
    Tensor aliased = dx.tensor;
    aliased.strides = {0, 0, 0, 0};
    EXPECT_NE(backward_data(p, dy.tensor, w.tensor, aliased).message().find("dx: a result tensor cannot have a zero"),
              std::string::npos);
    // A zero stride is fine on an input: it broadcasts.
    Tensor broadcast = w.tensor;
    broadcast.strides = {0, 0, 0, 1};
    EXPECT_TRUE(backward_data(p, dy.tensor, broadcast, dx.tensor).is_ok());
}

TEST_F(ExecuteValidation, UnsupportedDeviceAndBackend) {
    bool cuda_device = false;
    for (const DeviceInfo &d : devices()) cuda_device = cuda_device || d.api == Device::kCuda;
    if (!cuda_device) {  // CUDA without a driver or device: a status, never a crash
        RunOptions cuda;
        cuda.device = Device::kCuda;
        Status s = backward_data(p, dy.tensor, w.tensor, dx.tensor, cuda);
        EXPECT_EQ(s.code(), StatusCode::kUnsupported);
        EXPECT_NE(s.message().find("cuda"), std::string::npos) << s.message();
    }
    RunOptions jit;
    jit.backend = Backend::kJit;
    EXPECT_EQ(backward_data(p, dy.tensor, w.tensor, dx.tensor, jit).code(), StatusCode::kUnsupported);
}

TEST(CanonicalValidation, Rules) {
    ConvProblem p;
    EXPECT_TRUE(validate(p).is_ok());
    auto expect = [](ConvProblem q, const std::string &needle) {
        Status s = validate(q);
        EXPECT_FALSE(s.is_ok()) << needle;
        EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    };
    ConvProblem q = p;
    q.spatial_rank = 4;
    expect(q, "spatial_rank");
    q = p, q.groups = 0;
    expect(q, "groups");
    q = p, q.groups = 2, q.in_channels = 3, q.out_channels = 2;
    expect(q, "in_channels");
    q = p, q.output_size = {2, 1, 1};
    expect(q, "output_size[0]");
    q = p, q.strides = {0, 1, 1};
    expect(q, "strides[0]");
    q = p, q.kernel_size = {1, 0, 1};
    expect(q, "kernel_size[1]");
    q = p, q.filter_layout = FilterLayout::kXGM, q.groups = 1, q.in_channels = 2;
    expect(q, "XGM");
    q = p, q.batch = 1 << 20, q.in_channels = 1 << 12, q.input_size = q.output_size = {1, 1, 1};
    Status big = validate(q);
    EXPECT_EQ(big.code(), StatusCode::kUnsupported) << big.message();
}

}  // namespace
}  // namespace convgrad::test
