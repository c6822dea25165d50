// TensorFlow ops for `convgrad run`, spelled as in TF's op registry.
#include "convgrad/tf.h"
#include "ops.h"

namespace convgrad::cli {
namespace {

tf::ConvAttrs tf_attrs(const OpArgs &a) {
    tf::ConvAttrs attrs;
    attrs.strides = a.int_list("strides");
    attrs.dilations = a.int_list("dilations");
    attrs.explicit_paddings = a.int_list("explicit_paddings");
    attrs.padding = a.string_or("padding", "");
    attrs.data_format = a.string_or("data_format", "");  // the frontend defaults to NHWC / NDHWC
    return attrs;
}

using BackpropInputFn = Result<ConvProblem> (*)(const tf::ConvAttrs &, const Shape &, const Shape &, const Shape &,
                                                DType);
using BackpropFilterFn = BackpropInputFn;

// Conv3D*V2 ops have no explicit_paddings attribute.
std::vector<std::string> window_args(bool explicit_paddings, const char *sizes) {
    std::vector<std::string> v{sizes, "strides", "dilations"};
    if (explicit_paddings) v.push_back("explicit_paddings");
    return v;
}

OpSpec backprop_input(const char *name, BackpropInputFn fn, bool explicit_paddings = true) {
    return {name,
            {"filter", "out_backprop"},
            window_args(explicit_paddings, "input_sizes"),
            {"padding", "data_format"},
            {"input_sizes", "padding"},
            [fn](const OpArgs &a, DType dtype) -> Result<OpCall> {
                auto p = fn(tf_attrs(a), a.int_list("input_sizes"), a.shape("filter"), a.shape("out_backprop"), dtype);
                if (!p.is_ok()) return p.status;
                return OpCall{p.value, Direction::kBackwardData, "out_backprop", "filter"};
            }};
}

OpSpec backprop_filter(const char *name, BackpropFilterFn fn, bool explicit_paddings = true) {
    return {name,
            {"input", "out_backprop"},
            window_args(explicit_paddings, "filter_sizes"),
            {"padding", "data_format"},
            {"filter_sizes", "padding"},
            [fn](const OpArgs &a, DType dtype) -> Result<OpCall> {
                auto p = fn(tf_attrs(a), a.shape("input"), a.int_list("filter_sizes"), a.shape("out_backprop"), dtype);
                if (!p.is_ok()) return p.status;
                return OpCall{p.value, Direction::kBackwardWeights, "input", "out_backprop"};
            }};
}

}  // namespace

void add_tf_ops(std::vector<OpSpec> &table) {
    table.push_back(backprop_input("Conv2DBackpropInput", tf::conv2d_backprop_input));
    table.push_back(backprop_filter("Conv2DBackpropFilter", tf::conv2d_backprop_filter));
    table.push_back(backprop_input("DepthwiseConv2dNativeBackpropInput", tf::depthwise_conv2d_backprop_input));
    table.push_back(backprop_filter("DepthwiseConv2dNativeBackpropFilter", tf::depthwise_conv2d_backprop_filter));
    table.push_back(backprop_input("Conv3DBackpropInputV2", tf::conv3d_backprop_input_v2, false));
    table.push_back(backprop_filter("Conv3DBackpropFilterV2", tf::conv3d_backprop_filter_v2, false));
}

}  // namespace convgrad::cli
