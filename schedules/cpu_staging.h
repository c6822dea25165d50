// Staged copies of the activations, shared by the CPU schedules of both gradients.
#pragma once

#include "../generators/generator_common.h"

namespace convgrad::gen {

// Computes `f` (an activation-shaped Func: c, x, y, z, g, n) once, in parallel over rows,
// stored with `inner` (the tiles' vector dim: c, or g for depthwise) innermost.
// `transpose`: the source is channels-first (x contiguous). Then each vector gathers one x
// position across `vec` channels and the `vec` unrolled x positions after it reuse the same
// cache lines and pages; a plain gather per x sweep touches a new page in every lane
// (NCHW depthwise: 20 ms for mb_dw32_112's data gradient).
// The other channel dim (g, or c for depthwise) comes next, as in channels-last memory: a
// row of the copy then holds every group, so the threads' tasks (rows) are not cut into one
// per group (rx_g32_28: staging took as long as the convolution).
// Stores and computes `f` (c, x, y, z, g, n) with `inner` first and the other channel dim
// next, as channels-last memory holds a row: the order of every staged copy.
inline void order_vector_dim_innermost(Func f, const Var &inner) {
    const std::vector<Var> a = f.args();  // (c, x, y, z, g, n)
    const Var &other = inner.same_as(a[0]) ? a[4] : a[0];
    f.reorder_storage(inner, other, a[1], a[2], a[3], a[5]).reorder(inner, other, a[1], a[2], a[3], a[5]);
}

// Computes `f` inside `at` (a block of rows the consumer's tiles read, kept in cache), in
// the order above, vectorised along `inner`.
inline void stage_in_cache(Func f, const Var &inner, int vec, const LoopLevel &at) {
    f.compute_at(at);
    order_vector_dim_innermost(f, inner);
    f.vectorize(inner, vec, TailStrategy::GuardWithIf);
}

inline void stage_vector_dim_innermost(Func f, const Var &inner, int vec, bool transpose) {
    const std::vector<Var> a = f.args();  // (c, x, y, z, g, n)
    f.compute_root();
    order_vector_dim_innermost(f, inner);
    Var vo("vo"), vi("vi"), xo("xo"), xi("xi");
    if (transpose) {
        f.split(inner, vo, vi, vec, TailStrategy::GuardWithIf)
            .split(a[1], xo, xi, vec, TailStrategy::GuardWithIf)
            .reorder(vi, xi, vo, xo)
            .vectorize(vi).unroll(xi);
    } else {
        f.vectorize(inner, vec, TailStrategy::GuardWithIf);
    }
    f.parallel(a[5]).parallel(a[2]);
}

// Computes `f`, an activation staged as rows over zeros (generator_common.h), inside `at`,
// rows innermost (x, then channels): the zeros and each row's copy vectorised along x, the
// copy with a masked last vector.
inline void stage_rows_over_zeros(Func f, const LoopLevel &at, int vec) {
    const std::vector<Var> a = f.args();  // (c, x, y, z, g, n)
    const RVar row = f.rvars(0)[0];
    f.compute_at(at).reorder_storage(a[1], a[0], a[2], a[3], a[4], a[5]);
    f.reorder(a[1], a[0], a[2], a[3], a[4], a[5]).vectorize(a[1], vec, TailStrategy::GuardWithIf);
    f.update().reorder(row, a[0], a[2], a[3], a[4], a[5]).vectorize(row, vec, TailStrategy::GuardWithIf);
}

}  // namespace convgrad::gen
