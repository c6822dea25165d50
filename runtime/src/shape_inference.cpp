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

int64_t consistent_pad_end(int64_t input, int64_t output, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad_begin) {
    // span = I + pb + pe - Ke must be s*(O-1) (O >= 1); for O == 0 any negative span works.
    const int64_t span = output > 0 ? stride * (output - 1) : -1;
    return span - input - pad_begin + effective_kernel(kernel, dilation);
}

Window onednn_auto_pad(AutoPad mode, int64_t input, int64_t kernel, int64_t stride, int64_t dilation) {
    Window w;
    if (mode == AutoPad::kNone || mode == AutoPad::kValid) return w;
    const int64_t ke = effective_kernel(kernel, dilation);
    const int64_t rem = input % stride;
    const int64_t total = rem == 0 ? std::max<int64_t>(ke - stride, 0) : std::max<int64_t>(ke - rem, 0);
    w.pad_begin = mode == AutoPad::kSameUpper ? total / 2 : (total + 1) / 2;
    w.pad_end = total - w.pad_begin;
    return w;
}

namespace {
// Python's // by 2 (ONNX's reference rounds towards -inf; C++ / would round towards 0).
int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }
}  // namespace

TransposeWindow onnx_transpose_window(OnnxAutoPad mode, int64_t x_size, int64_t kernel, int64_t stride,
                                      int64_t dilation, int64_t output_padding, int64_t pads_begin,
                                      int64_t pads_end, int64_t output_shape) {
    const int64_t natural = stride * (x_size - 1) + output_padding + effective_kernel(kernel, dilation);
    const bool same = mode == OnnxAutoPad::kSameUpper || mode == OnnxAutoPad::kSameLower;
    if (output_shape < 0 && same) output_shape = x_size * stride;
    if (output_shape < 0) {
        if (mode == OnnxAutoPad::kValid) pads_begin = pads_end = 0;
        return {natural - pads_begin - pads_end, pads_begin};
    }
    const int64_t total = natural - output_shape;
    const int64_t begin = mode == OnnxAutoPad::kSameUpper ? floor_div2(total) : total - floor_div2(total);
    return {output_shape, begin};
}

}  // namespace convgrad::shape
