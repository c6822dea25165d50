// ONNX ConvTranspose for `convgrad run`, with ONNX's attribute names.
#include "convgrad/onnx.h"
#include "ops.h"

namespace convgrad::cli {

void add_onnx_ops(std::vector<OpSpec> &table) {
    table.push_back({"ConvTranspose",
                     {"X", "W"},
                     {"dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"},
                     {"auto_pad"},
                     {},
                     [](const OpArgs &a, DType dtype) -> Result<OpCall> {
                         onnx::ConvTransposeAttrs attrs;
                         attrs.auto_pad = a.string_or("auto_pad", "NOTSET");
                         attrs.dilations = a.int_list("dilations");
                         attrs.kernel_shape = a.int_list("kernel_shape");
                         attrs.output_padding = a.int_list("output_padding");
                         attrs.output_shape = a.int_list("output_shape");
                         attrs.pads = a.int_list("pads");
                         attrs.strides = a.int_list("strides");
                         auto group = a.scalar("group", 1);
                         if (!group.is_ok()) return Status(group.status.code(), "ConvTranspose: " + group.status.message());
                         attrs.group = group.value;
                         auto p = onnx::conv_transpose(attrs, a.shape("X"), a.shape("W"), dtype);
                         if (!p.is_ok()) return p.status;
                         return OpCall{p.value, Direction::kBackwardData, "X", "W"};
                     }});
}

}  // namespace convgrad::cli
