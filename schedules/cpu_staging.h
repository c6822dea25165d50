// Staged copies of the activations, shared by the CPU schedules of both gradients.
#pragma once

#include "../generators/generator_common.h"

namespace convgrad::gen {

// Stores and computes `f` (c, x, y, z, g, n) with `inner` first and the other channel dim
// next, as channels-last memory holds a row: the order of every staged copy. (With groups
// next, a row of the copy holds every group, so the threads' tasks (rows) are not cut into
// one per group: rx_g32_28's staging took as long as the convolution.)
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

// Pads each pixel of a staged copy `f` (stored `inner` first) by one cache line when its
// `extent` channels of `bytes` each span a multiple of `period` bytes and it has one group
// (ResNeXt's small groups would pay the line per group). A tile that reads one line per
// pixel then spreads them over every set of the caches: unpadded, 2048 channels (8 KB a
// pixel) put them in 16 of a 2 MB L2's 2048 sets, 256 lines for a tile's 392, and each
// tile re-read its x from L3. Kernel alone, filter gradients on a Xeon: rn50_1x1_7 1.19x
// (NHWC) and 1.21x (NCHW), rn50_1x1_56 1.06x (64 channels of x, 256 bytes), dl_3x3_d2
// 1.05x. The pad is a line more to copy per pixel: NCHW copies (transposed, whole) pad
// only from 1 KB on (the stem's 64-channel dy cost its filter gradient 0.93x, and
// 128-channel layers 0.97x). (Measured on x's copies, which the dense filter gradients now
// stage in blocks of contiguous pixels instead (x_blocks); it still pads the transposed dy
// of channels-first layers, 16-bit staged copies and the `any` variant's x.)
inline void pad_aliasing_pixels(Func f, const Var &inner, const Expr &extent, const Expr &groups, int bytes,
                                int period) {
    const Expr aliasing = groups == 1 && (extent * bytes) % period == 0;
    f.align_storage(inner, extent + select(aliasing, 64 / bytes, 0));
}

// Computes `f` (an activation-shaped Func: c, x, y, z, g, n) once, in parallel over rows,
// stored with `inner` (the tiles' vector dim: c, or g for depthwise) innermost.
// `transpose`: the source is channels-first (x contiguous). Then each vector gathers one x
// position across its channels' planes and the `vec` unrolled x positions after it reuse the
// same cache lines and pages; a plain gather per x sweep touches a new page in every lane
// (NCHW depthwise: 20 ms for mb_dw32_112's data gradient). (A sweep along x inside each
// vector of planes, no block, measured worse: NCHW filter gradients 0.469x vs 0.491x.)
// Vectors take the widest of vec, vec/2 and vec/4 lanes that `inner_extent` (the extent of
// `inner`) fills, the last one shifted inwards; narrower dims are copied by scalars. A
// guarded vector predicates its gathers lane by lane: with 16 lanes over ResNeXt's 8
// channels per group, staging took twice as long as the tiles (rx_g32_28's NCHW filter
// gradient: 4.3 -> 3.0 ms with 8 lanes). Copies that do not transpose (16-bit conversions)
// load contiguous vectors: `vec` lanes, the last one masked.
// `rows_pass` (root, transposing, 32-bit elements; the pipeline runs the TransposedRows
// lowering pass): each vector of planes sweeps x plainly instead, a loop the pass rewrites
// into chunks of 8 positions, one contiguous load per plane and 8 stores of shuffles, where
// Halide built each gather from a scalar load and an insert per lane. NCHW filter gradients
// (kernel alone on the EPYC): rn50_3x3_56's dy 1.08 -> 0.57 ms of staging, the kernel 1.04x;
// rn50_1x1_56 (ncx_db: x staged so) 1.13x, the stem 1.08x, u3d 1.06x, the rest 0.97-1.00x.
// (NCHW data gradients' dy staged so: 0.98-1.02x, not taken.)
// `at` (not null): computed there instead (in cache, serially), not once in parallel over rows.
// There (the ncg kernels' blocks of planes, rows narrower than kPixelVectorMinRow) each
// vector of planes sweeps x plainly: `vec` positions unrolled, each behind its own guard,
// took 1.12-1.37x as long on 7x7 planes (kernel alone: the mb_dw960_7 and mb_dw576s2_14
// filter gradients, mb_dw576s2_14's data gradient).
inline void stage_vector_dim_innermost(Func f, const Var &inner, const Expr &inner_extent, int vec, bool transpose,
                                       const LoopLevel *at = nullptr, bool rows_pass = false) {
    const std::vector<Var> a = f.args();  // (c, x, y, z, g, n)
    const bool root = at == nullptr;
    f.compute_at(root ? LoopLevel::root() : *at);
    order_vector_dim_innermost(f, inner);
    if (transpose) {
        Var vo("vo"), vi("vi"), xo("xo"), xi("xi");
        for (int lanes = vec; lanes >= 4; lanes /= 2) {
            // (A specialisation copies the schedule as it stands: each sets its own loops.)
            Stage st = f.specialize(inner_extent >= lanes);
            st.split(inner, vo, vi, lanes, TailStrategy::ShiftInwards);
            if (root && rows_pass) {
                st.reorder(vi, a[1], vo).vectorize(vi);
                st.parallel(a[5]).parallel(a[2]);
            } else if (root) {
                st.split(a[1], xo, xi, vec, TailStrategy::GuardWithIf).reorder(vi, xi, vo, xo).vectorize(vi).unroll(xi);
                st.parallel(a[5]).parallel(a[2]);
            } else {
                st.reorder(vi, vo, a[1]).vectorize(vi);
            }
        }
    } else {
        f.vectorize(inner, vec, TailStrategy::GuardWithIf);
    }
    if (root) f.parallel(a[5]).parallel(a[2]);
}

// Copies `f`, an activation seen as pairs of groups (generator_common.h: group_pairs, a Func
// of (gpar, c, x, y, z, gp, n)), along the source's rows: each pixel's pairs in turn, so the
// reads run along the pixel's channels, each vector a pair's `vec` values, (gpar, c) with the
// group innermost. Where the source's group stride `g_stride` is half a vector, the pair's
// channels are one dense load (and a shuffle); else each lane is loaded alone. Where it is
// computed and how it is stored are the caller's (the small-group variants, nxc_sg).
// `channels_first` (ncx_sg: the source's rows contiguous): a pair at a time, each vector
// sweeping its row plainly, a loop the TransposedRows pass transposes (transposed_rows.h:
// the pair's channels as a concatenation of loads). With the pairs innermost, as channels
// last, every row read one piece of each of the 256 planes in turn: kernel alone on NCHW
// rx_g32_28, 0.28 + 0.43 ms of staging against 0.61 + 0.72.
// Channels last, a pair at a time ran nxc_sg 0.85x (the pixel's channels read 64 bytes at
// a time, 1 KB apart) on the Zen 4 (fortieth session), but where a pair is one dense vector
// (`channels`, the copy's channels per group, half a vector, and g_stride too) it now runs a
// pair at a time, specialised on that channel count: profiled on the Zen 5 (rx_g32_28,
// kernel alone), the filter gradient's x_pairs 0.46-0.62 -> 0.20-0.32 ms and dy_pairs
// 0.25-0.36 -> 0.13-0.24 (each pair's plane stored in one stream, not 16 interleaved;
// kernel 1.09-1.59x, suite 1.25 -> 1.15 ms), the data gradient's dy_pairs 0.54 -> 0.17 ms
// (the channel count, a constant, is what its copy gained: pixel order 0.18; kernel
// 1.06-1.12x, suite unchanged). The JIT kernels, whose extents are all constants, had shown
// it: 1.3-1.9x the AOT ones, kernel alone; in the bench now the same time.
inline void copy_pairs_along_rows(Func f, const Expr &g_stride, int vec, bool channels_first = false,
                                  const Expr &channels = Expr()) {
    const std::vector<Var> a = f.args();  // (gpar, c, x, y, z, gp, n)
    if (channels_first) {
        Var co("co"), ci("ci");
        f.split(a[1], co, ci, vec / 2, TailStrategy::ShiftInwards)
            .reorder(a[0], ci, a[2], co, a[3], a[4], a[6], a[5])
            .vectorize(a[0])
            .vectorize(ci);
        return;
    }
    if (channels.defined()) {  // (before the reorder: a pair's plane at a time, Func's own loop order)
        f.specialize(g_stride == vec / 2 && channels == vec / 2)
            .vectorize(a[0])
            .vectorize(a[1], vec / 2, TailStrategy::GuardWithIf);
    }
    f.reorder(a[0], a[1], a[5], a[2], a[3], a[4], a[6]);
    f.specialize(g_stride == vec / 2).vectorize(a[0]).vectorize(a[1], vec / 2, TailStrategy::GuardWithIf);
    f.vectorize(a[0]).vectorize(a[1], vec / 2, TailStrategy::GuardWithIf);
}

// Computes `f`, an activation staged as rows over zeros (generator_common.h), inside `at`,
// rows innermost (x, then channels): the zeros and each row's copy vectorised along x, the
// copy with a masked last vector. A staged row holds whole vectors (align_extent), so the
// zeros are whole vectors: with a ragged row, each zero vector of a run-time width was a
// masked store whose mask was computed per vector (kernel alone: depthwise NCHW data
// gradients 1.02-1.25x, filter gradients 1.06-1.11x).
inline void stage_rows_over_zeros(Func f, const LoopLevel &at, int vec) {
    const std::vector<Var> a = f.args();  // (c, x, y, z, g, n)
    const RVar row = f.rvars(0)[0];
    f.compute_at(at).reorder_storage(a[1], a[0], a[2], a[3], a[4], a[5]).align_extent(a[1], vec);
    f.reorder(a[1], a[0], a[2], a[3], a[4], a[5]).vectorize(a[1], vec, TailStrategy::GuardWithIf);
    f.update().reorder(row, a[0], a[2], a[3], a[4], a[5]).vectorize(row, vec, TailStrategy::GuardWithIf);
}

// Whether a schedule gives half vectors their own branches: only where half a vector is 4
// lanes or more (AVX2 and AVX-512 float32, AVX-512 float64). Of 2 lanes (SSE4.1 and NEON
// float32, AVX2 float64) they serve groups of 2-3 channels alone, which the narrower nests
// take as well, and of 1 (SSE4.1 and NEON float64) they are the scalar nest again, each
// with its own stride specialisations. With them, Halide 14's bounds on those paths grew
// into select trees of every branch (the filter gradient's image checks alone 28 MB of IR
// for SSE4.1 float32 nxc): lowering nxc took 44 -> 12 s (SSE4.1 float32), 41 -> 9 s (AVX2
// float64), 43 -> 11 s (ARM64 float32) (bench/RESULTS.md, sixty-third session).
inline bool half_vectors_pay(int vec) { return vec / 2 >= 4; }

// The depthwise channels-first (ncg) tasks: a block of `vec` groups over a run of images,
// each image's planes staged in cache and one allocation a task. The runs are as long as
// about 16 tasks allow (16 blocks or more: every image in one run); returns the run length.
// One task per image and block (mb_dw960_7: 480 tasks of ~0.4 us, each allocating its
// staged planes) spent a third of the filter gradient in the thread pool and the allocator.
inline Expr ncg_images_per_task(const Expr &groups, const Expr &images, int vec) {
    const Expr blocks = (groups + vec - 1) / vec;
    const Expr runs = Halide::min(images, (16 + blocks - 1) / blocks);
    return Halide::max(1, (images + runs - 1) / runs);
}

// A flat-plane variant's input plane (generators/flat_planes.h: flat_plane, a Func of
// (i, g, n)) copied inside `at` (one plane's loop) with the zeros around it that the taps
// read, in whole vectors: the tiles then load it with no boundary test. Stored at `store`
// (a thread's task), where Halide folds the storage to one plane: one allocation a task,
// not one a plane. Read in place, the
// tiles near a plane's ends took clamped per-lane loads, and without the problem's sizes
// Halide's partition of the tile loop (whose bounds it takes over every filter branch) left
// no tile in the interior: 3x slower than the kernel specialised to mb_dw192_28.
inline void stage_flat_plane(Func f, const LoopLevel &store, const LoopLevel &at, int vec) {
    const Var i = f.args()[0];
    f.store_at(store).compute_at(at).align_bounds(i, vec).vectorize(i, vec, TailStrategy::GuardWithIf);
    // (Halide folds a pure loop by itself; over a reduction's loop it has to be told.)
    f.fold_storage(f.args()[2], 1);
}

// A flat-plane variant's column tests (generators/flat_planes.h: column_test), computed once
// per call before the tiles, vectorised along the plane.
inline void compute_column_test(Func f, int vec) {
    f.compute_root().vectorize(f.args()[0], vec, TailStrategy::GuardWithIf);
}

}  // namespace convgrad::gen
