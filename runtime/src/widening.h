// CPU problems whose dtype this build has no kernels of its own for run on a wider dtype's
// kernels (execute.cpp: run_widened): 16-bit floats on float32's, int32 on float64's. Their
// tensors are copied into the wider dtype and the result converted back: element by element
// over views of any strides, in parallel on the kernels' pool.
#pragma once

#include <cstdint>

#include "canonical_view.h"

namespace convgrad {

// Copies `from` (float16 or bfloat16; int32) into `to` (float32; float64: `from`'s extents,
// compact, as like_compact makes it), exactly. Returns the largest magnitude of an int32
// `from` (0 for the floats).
uint32_t widen(const CanonicalView &from, const CanonicalView &to);

// Rounds `from` (float32, compact) into `to` (float16 or bfloat16, `from`'s extents) to
// nearest, ties to even: past the largest finite value to infinity, into float16's
// subnormals as they fall, NaN to a quiet NaN. From float64 holding exact integers into
// int32: wrapped to 32 bits, as int32 sums wrap.
void narrow(const CanonicalView &from, const CanonicalView &to);

// The largest magnitude of an int32 view's elements.
uint32_t largest_magnitude(const CanonicalView &v);

}  // namespace convgrad
