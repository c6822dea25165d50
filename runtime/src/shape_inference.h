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

}  // namespace convgrad::shape
