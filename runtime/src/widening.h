// 16-bit floats on the CPU run on the float32 kernels (execute.cpp: run_widened): their
// tensors copied into float32 and the float32 result rounded back. The copies and roundings,
// element by element over views of any strides, in parallel on the kernels' pool.
#pragma once

#include "canonical_view.h"

namespace convgrad {

// Copies `from` (float16 or bfloat16) into `to` (float32, `from`'s extents, compact: as
// like_compact makes it), exactly.
void widen(const CanonicalView &from, const CanonicalView &to);

// Rounds `from` (float32, compact) into `to` (float16 or bfloat16, `from`'s extents) to
// nearest, ties to even: past the largest finite value to infinity, into float16's
// subnormals as they fall, NaN to a quiet NaN.
void narrow(const CanonicalView &from, const CanonicalView &to);

}  // namespace convgrad
