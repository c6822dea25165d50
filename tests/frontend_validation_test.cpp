// Every validation rule of the oneDNN Graph, ONNX and TF 3-D frontends: invalid input gives
// kInvalidArgument and a message naming the op and the offending argument.
#include <gtest/gtest.h>

#include "convgrad/onednn.h"
#include "convgrad/onnx.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

void expect_invalid(const Result<ConvProblem> &r, const std::string &needle) {
    ASSERT_FALSE(r.is_ok()) << "accepted; expected an error mentioning '" << needle << "'";
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status.message().find(needle), std::string::npos) << r.status.message();
}

// A valid 2-D oneDNN Graph problem: NXC, XIO, 2 groups, 3x3, stride 1, pads 1.
struct OneDnnCall {
    onednn::ConvAttrs attrs;
    Shape dy{2, 6, 6, 8}, filter{3, 3, 2, 8}, output_shape{6, 6}, x{2, 6, 6, 4}, filters_shape{3, 3};
    OneDnnCall() {
        attrs.groups = 2;
        attrs.pads_begin = attrs.pads_end = {1, 1};
    }
    Result<ConvProblem> data() const {
        return onednn::convolution_backprop_data(attrs, dy, filter, output_shape, DType::kFloat32);
    }
    Result<ConvProblem> filters() const {
        return onednn::convolution_backprop_filters(attrs, x, dy, filters_shape, DType::kFloat32);
    }
};

TEST(OneDnnGraphValidation, BaselineIsValid) {
    OneDnnCall c;
    EXPECT_TRUE(c.data().is_ok()) << c.data().status.message();
    EXPECT_TRUE(c.filters().is_ok()) << c.filters().status.message();
}

TEST(OneDnnGraphValidation, Attributes) {
    struct Case {
        void (*mutate)(OneDnnCall &);
        const char *needle;
    };
    const Case cases[] = {
        {[](OneDnnCall &c) { c.attrs.data_format = "NHWC"; }, "data_format: must be NXC or NCX"},
        {[](OneDnnCall &c) { c.attrs.filter_format = "HWIO"; }, "filter_format: must be XIO or OIX"},
        {[](OneDnnCall &c) { c.attrs.auto_pad = "same"; }, "auto_pad: must be none, same_upper"},
        {[](OneDnnCall &c) { c.attrs.groups = 0; }, "groups: must be >= 1"},
        {[](OneDnnCall &c) { c.attrs.groups = 3; }, "groups: 3 must divide"},
        {[](OneDnnCall &c) { c.attrs.strides = {1, 1, 1}; }, "strides: must have 2 entries"},
        {[](OneDnnCall &c) { c.attrs.strides = {1, 0}; }, "strides: entries must be >= 1"},
        {[](OneDnnCall &c) { c.attrs.dilations = {0, 1}; }, "dilations: entries must be >= 1"},
        {[](OneDnnCall &c) { c.attrs.pads_begin = {-1, 0}; }, "pads_begin: entries must be >= 0"},
        {[](OneDnnCall &c) { c.attrs.pads_end = {1}; }, "pads_end: must have 2 entries"},
        {[](OneDnnCall &c) { c.dy = {2, 6, 8}; }, "pads_begin: must have 1 entries"},  // 1-D problem now
        {[](OneDnnCall &c) { c.dy = {2, 6, 8}, c.attrs.pads_begin = c.attrs.pads_end = {}; },
         "must be 3-D like output_delta"},
        {[](OneDnnCall &c) { c.dy = {2, 8}; }, "output_delta: must be 3-D, 4-D or 5-D"},
        {[](OneDnnCall &c) { c.dy = {2, 5, 6, 8}; }, "output_delta: spatial dim 0 is 5"},
    };
    for (const Case &k : cases) {
        OneDnnCall c;
        k.mutate(c);
        SCOPED_TRACE(k.needle);
        expect_invalid(c.data(), k.needle);
        expect_invalid(c.filters(), k.needle);
    }
}

TEST(OneDnnGraphValidation, DataOpShapes) {
    OneDnnCall c;
    c.filter = {3, 3, 2, 7};
    expect_invalid(c.data(), "filter: output channels 7 do not match output_delta's 8");
    c = OneDnnCall();
    c.filter = {3, 3, 2};
    expect_invalid(c.data(), "filter: must be 4-D");
    c = OneDnnCall();
    c.output_shape = {6, 6, 6};
    expect_invalid(c.data(), "output_shape: must have 2 (spatial) or 4 (full shape) entries");
    c.output_shape = {2, 6, 6, 5};
    expect_invalid(c.data(), "output_shape: [2, 6, 6, 5] disagrees");
    c.output_shape = {9, 6};
    expect_invalid(c.data(), "output_delta: spatial dim 0 is 6, but a convolution of input size 9");
    c.output_shape = {-6, 6};
    expect_invalid(c.data(), "output_shape: negative size");
    c = OneDnnCall();
    c.attrs.output_padding = {1, -1};
    expect_invalid(c.data(), "output_padding: entries must be >= 0");
    c.output_shape = {};
    c.attrs.pads_begin = c.attrs.pads_end = {4, 4};
    c.attrs.output_padding = {};
    c.dy = {2, 1, 1, 8};
    expect_invalid(c.data(), "output_shape: inferred spatial size -5 is negative");
}

TEST(OneDnnGraphValidation, FiltersOpShapes) {
    OneDnnCall c;
    c.attrs.output_padding = {1, 1};
    expect_invalid(c.filters(), "output_padding: only the data op takes it");
    c = OneDnnCall();
    c.filters_shape = {3, 3, 3};
    expect_invalid(c.filters(), "filters_shape: must have 2 (spatial) or 4 (full shape) entries");
    c.filters_shape = {3, 3, 4, 8};  // full XIO, but IC/G is 2
    expect_invalid(c.filters(), "filters_shape: [3, 3, 4, 8] disagrees");
    c = OneDnnCall();
    c.x = {3, 6, 6, 4};
    expect_invalid(c.filters(), "output_delta: batch 2 does not match input's 3");
    c = OneDnnCall();
    c.x = {2, 6, 6};
    expect_invalid(c.filters(), "input: must be 4-D");
}

// A valid ONNX ConvTranspose: X [1, 4, 3, 3], W [4, 3, 3, 3], 2 groups, stride 2.
struct OnnxCall {
    onnx::ConvTransposeAttrs attrs;
    Shape x{1, 4, 3, 3}, w{4, 3, 3, 3};
    OnnxCall() {
        attrs.group = 2;
        attrs.strides = {2, 2};
    }
    Result<ConvProblem> run() const { return onnx::conv_transpose(attrs, x, w, DType::kFloat32); }
};

TEST(OnnxValidation, Rules) {
    EXPECT_TRUE(OnnxCall().run().is_ok());
    struct Case {
        void (*mutate)(OnnxCall &);
        const char *needle;
    };
    const Case cases[] = {
        {[](OnnxCall &c) { c.x = {1, 4}; }, "X: must be 3-D, 4-D or 5-D"},
        {[](OnnxCall &c) { c.w = {4, 3, 3}; }, "W: must be 4-D like X"},
        {[](OnnxCall &c) { c.attrs.auto_pad = "same_upper"; }, "auto_pad: must be NOTSET, SAME_UPPER"},
        {[](OnnxCall &c) { c.attrs.group = 0; }, "group: must be >= 1"},
        {[](OnnxCall &c) { c.attrs.group = 3; }, "group: 3 must divide X's channels 4"},
        {[](OnnxCall &c) { c.w = {5, 3, 3, 3}; }, "W: first dimension 5 must equal X's channels 4"},
        {[](OnnxCall &c) { c.attrs.kernel_shape = {3, 2}; }, "kernel_shape: 2 differs from W's spatial size 3"},
        {[](OnnxCall &c) { c.attrs.pads = {1, 1, 1}; }, "pads: must have 4 entries"},
        {[](OnnxCall &c) { c.attrs.pads = {1, -1, 1, 1}; }, "pads: entries must be >= 0"},
        {[](OnnxCall &c) { c.attrs.pads = {9, 9, 9, 9}; }, "pads: the output size along spatial axis 0 would be"},
        {[](OnnxCall &c) { c.attrs.output_padding = {2, 0}; }, "output_padding: 2 must be less than the stride"},
        {[](OnnxCall &c) { c.attrs.output_shape = {7}; }, "output_shape: must have 2 (spatial) or 4"},
        {[](OnnxCall &c) { c.attrs.strides = {2, 0}; }, "strides: entries must be >= 1"},
        {[](OnnxCall &c) { c.attrs.dilations = {1}; }, "dilations: must have 2 entries"},
    };
    for (const Case &k : cases) {
        OnnxCall c;
        k.mutate(c);
        SCOPED_TRACE(k.needle);
        expect_invalid(c.run(), std::string("ConvTranspose: ") + k.needle);
    }
}

TEST(TfConv3DValidation, Rules) {
    tf::ConvAttrs attrs{{}, {}, "SAME", {}, ""};
    const Shape in{1, 4, 4, 4, 2}, filt{3, 3, 3, 2, 3}, dy{1, 4, 4, 4, 3};
    EXPECT_TRUE(tf::conv3d_backprop_input_v2(attrs, in, filt, dy, DType::kFloat32).is_ok());
    attrs.padding = "EXPLICIT";
    attrs.explicit_paddings = std::vector<int64_t>(10, 0);
    expect_invalid(tf::conv3d_backprop_input_v2(attrs, in, filt, dy, DType::kFloat32),
                   "Conv3DBackpropInputV2: padding: must be SAME or VALID");
    attrs = {{}, {}, "SAME", {}, "NHWC"};
    expect_invalid(tf::conv3d_backprop_filter_v2(attrs, in, filt, dy, DType::kFloat32),
                   "Conv3DBackpropFilterV2: data_format: must be NDHWC or NCDHW");
    attrs.data_format = "";
    expect_invalid(tf::conv3d_backprop_input_v2(attrs, {4, 4}, filt, dy, DType::kFloat32),
                   "input_sizes: must have 5 entries");
    attrs.strides = {1, 1, 1, 1};
    expect_invalid(tf::conv3d_backprop_input_v2(attrs, in, filt, dy, DType::kFloat32), "strides: must have 5 entries");
    attrs.strides = {};
    expect_invalid(tf::conv3d_backprop_filter_v2(attrs, in, {3, 3, 2, 3}, dy, DType::kFloat32),
                   "filter_sizes: must be 5-D");
}

}  // namespace
}  // namespace convgrad::test
