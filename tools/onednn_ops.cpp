// oneDNN Graph ops for `convgrad run`, with the argument names of the -1 op specs.
#include "convgrad/onednn.h"
#include "ops.h"

namespace convgrad::cli {
namespace {

Result<onednn::ConvAttrs> onednn_attrs(const OpArgs &a) {
    onednn::ConvAttrs attrs;
    attrs.strides = a.int_list("strides");
    attrs.pads_begin = a.int_list("pads_begin");
    attrs.pads_end = a.int_list("pads_end");
    attrs.dilations = a.int_list("dilations");
    attrs.output_padding = a.int_list("output_padding");
    attrs.auto_pad = a.string_or("auto_pad", "none");
    attrs.data_format = a.string_or("data_format", "NXC");
    attrs.filter_format = a.string_or("filter_format", "XIO");
    auto groups = a.scalar("groups", 1);
    if (!groups.is_ok()) return groups.status;
    attrs.groups = groups.value;
    return attrs;
}

const std::vector<std::string> kWindowArgs = {"strides", "pads_begin", "pads_end", "dilations", "groups"};
const std::vector<std::string> kStringArgs = {"auto_pad", "data_format", "filter_format"};

std::vector<std::string> with(std::vector<std::string> v, const std::string &extra) {
    v.insert(v.begin(), extra);
    return v;
}

}  // namespace

void add_onednn_ops(std::vector<OpSpec> &table) {
    std::vector<std::string> data_ints = with(kWindowArgs, "output_shape");
    data_ints.push_back("output_padding");
    table.push_back({"ConvolutionBackpropData",
                     {"output_delta", "filter"},
                     data_ints,
                     kStringArgs,
                     {},
                     [](const OpArgs &a, DType dtype) -> Result<OpCall> {
                         auto attrs = onednn_attrs(a);
                         if (!attrs.is_ok()) return attrs.status;
                         auto p = onednn::convolution_backprop_data(attrs.value, a.shape("output_delta"), a.shape("filter"),
                                                                    a.int_list("output_shape"), dtype);
                         if (!p.is_ok()) return p.status;
                         return OpCall{p.value, Direction::kBackwardData, "output_delta", "filter"};
                     }});
    table.push_back({"ConvolutionBackpropFilters",
                     {"input", "output_delta"},
                     with(kWindowArgs, "filters_shape"),
                     kStringArgs,
                     {"filters_shape"},
                     [](const OpArgs &a, DType dtype) -> Result<OpCall> {
                         auto attrs = onednn_attrs(a);
                         if (!attrs.is_ok()) return attrs.status;
                         auto p = onednn::convolution_backprop_filters(attrs.value, a.shape("input"),
                                                                       a.shape("output_delta"),
                                                                       a.int_list("filters_shape"), dtype);
                         if (!p.is_ok()) return p.status;
                         return OpCall{p.value, Direction::kBackwardWeights, "input", "output_delta"};
                     }});
}

}  // namespace convgrad::cli
