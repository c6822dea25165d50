// The one shape-inference module: how each framework turns (input size, kernel, stride,
// dilation, padding mode) into an output size and pads. Frontends call these; nothing else
// computes pads. Formulas: ../shared/docs/semantics.md.
#pragma once

#include <cstdint>

#include "convgrad/status.h"

namespace convgrad::shape {

inline int64_t effective_kernel(int64_t kernel, int64_t dilation) { return (kernel - 1) * dilation + 1; }

struct Window {
    int64_t output = 0;
    int64_t pad_begin = 0;
    int64_t pad_end = 0;
};

enum class TfPadding { kValid, kSame, kExplicit };

// TF GetWindowedOutputSizeVerbose: truncating division, negative output is an error.
// `what` names the axis in the message ("spatial dim 1").
Result<Window> tf_window(int64_t input, int64_t kernel, int64_t stride, int64_t dilation,
                         TfPadding padding, int64_t explicit_begin, int64_t explicit_end);

// The canonical rule kernels rely on: O = max(0, floor((I + pb + pe - Ke) / s) + 1).
int64_t canonical_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t dilation,
                              int64_t pad_begin, int64_t pad_end);

// The pads_end that makes a data gradient of size I consistent with an output of size O
// (kernels never read it: rows past the last reachable one simply get zero gradient).
// With it, canonical_output_size(I, K, s, d, pb, result) == O.
int64_t consistent_pad_end(int64_t input, int64_t output, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad_begin);

// oneDNN Graph auto_pad (also the forward SAME rule), on the forward input size I:
// total = I % s == 0 ? max(Ke - s, 0) : max(Ke - I % s, 0); same_upper puts the odd row
// after, same_lower before; valid pads nothing.
enum class AutoPad { kNone, kSameUpper, kSameLower, kValid };
Window onednn_auto_pad(AutoPad mode, int64_t input, int64_t kernel, int64_t stride, int64_t dilation);

// ONNX ConvTranspose, per axis: the data-gradient size I and pad_begin from the input size of
// X (= O), following onnx/defs/nn/defs.cc (floor division, as ONNX's reference does).
//   output_shape given (>= 0): total = s*(O-1) + op + Ke - output_shape, split SAME_UPPER
//     (begin = total//2) or otherwise (end = total//2);
//   SAME_UPPER/LOWER without it: output_shape = O*s, split likewise;
//   otherwise I = s*(O-1) + op + Ke - pads_begin - pads_end.
enum class OnnxAutoPad { kNotSet, kSameUpper, kSameLower, kValid };
struct TransposeWindow {
    int64_t input = 0;      // the data-gradient (ConvTranspose output) size
    int64_t pad_begin = 0;
};
TransposeWindow onnx_transpose_window(OnnxAutoPad mode, int64_t x_size, int64_t kernel, int64_t stride,
                                      int64_t dilation, int64_t output_padding, int64_t pads_begin,
                                      int64_t pads_end, int64_t output_shape /* -1: not given */);

}  // namespace convgrad::shape
