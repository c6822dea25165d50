#include "shape_inference.h"

#include <algorithm>
#include <string>

namespace convgrad::shape {

Result<Window> tf_window(int64_t input, int64_t kernel, int64_t stride, int64_t dilation,
                         TfPadding padding, int64_t explicit_begin, int64_t explicit_end) {
    const int64_t ke = effective_kernel(kernel, dilation);
    Window w;
    switch (padding) {
    case TfPadding::kValid:
        w.output = (input - ke + stride) / stride;  // C++ truncation, exactly as TF
        break;
    case TfPadding::kExplicit:
        w.output = (input + explicit_begin + explicit_end - ke + stride) / stride;
        w.pad_begin = explicit_begin;
        w.pad_end = explicit_end;
        break;
    case TfPadding::kSame: {
        w.output = (input + stride - 1) / stride;
        const int64_t total = std::max<int64_t>(0, (w.output - 1) * stride + ke - input);
        w.pad_begin = total / 2;
        w.pad_end = total - w.pad_begin;
        break;
    }
    }
    if (w.output < 0) {
        return Status::invalid("computed output size would be negative: " + std::to_string(w.output) +
                               " (input " + std::to_string(input) + ", effective filter " +
                               std::to_string(ke) + ", stride " + std::to_string(stride) + ")");
    }
    return w;
}

int64_t canonical_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t dilation,
                              int64_t pad_begin, int64_t pad_end) {
    const int64_t span = input + pad_begin + pad_end - effective_kernel(kernel, dilation);
    if (span < 0) return 0;
    return span / stride + 1;
}

}  // namespace convgrad::shape
