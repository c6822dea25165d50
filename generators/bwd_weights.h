// The filter-gradient pipeline's stages, shared between algorithm and schedules.
#pragma once

#include "generator_common.h"

namespace convgrad::gen {

// The small-group variants (nxc_sg, ncx_sg) take groups of this many dy channels (the
// registry's kSmallGroupPairChannels, runtime/src/kernel_registry.h): a pair of them fills
// an AVX-512 vector of float32.
constexpr int kSmallGroupPairChannels = 8;

struct BwdWeightsStages {
    Func dw;         // output, storage type
    Func acc;        // accumulator
    Func x_in, dy_in;  // inputs (x zero-padded) in the accumulator type (schedules may stage them)
    bool staged_inputs = false;  // 16-bit storage: convert inputs once, not per use
    // ncx (32-bit types): the pipeline runs the TransposedRows lowering pass
    // (transposed_rows.h), so a whole transposing copy sweeps x plainly for it.
    bool rows_pass = false;
    bool dy_broadcasts = false;  // ncx_db: tiles of vectors of ci, dy broadcast from its rows
    // nxc_sg: x_in reads x_pairs (gpar, c, x, y, z, gp, n), x staged with the channels of
    // groups 2*gp and 2*gp + 1 interleaved.
    bool small_groups = false;
    // nxc_wr: acc's reduction whole (no chunks, no rfactor), summed per tile in registers and
    // stored into dw (schedules/cpu_bwd_weights.cpp).
    bool whole_reduction = false;
    bool group_tasks = false;  // nxg_gt: a task per block of groups, every image, no partial sums
    bool staged_dy = false;  // nxg_sd: each chunk's rows of dy staged in cache, as x's are
    // nxc_xp and nxg_xp (CPUs, native float types): x_in reads x in place, its indices
    // clamped into x; nxc_xp's reduction (r) skips the positions whose taps fall on the
    // padding, nxg_xp subtracts their products (frame) (generators/bwd_weights_generator.cpp);
    // strided along x, nxg_xp's reduction reads only the columns whose taps read inside x.
    bool x_in_place = false;
    // nxg_xp: the products of the taps that read past x (the frame of rows, planes and
    // columns at the ends), which dw subtracts from acc's, less the products of the columns
    // that the reduction leaves out (strided along x); undefined elsewhere.
    Func frame;
    Func x_pairs, dy_pairs;
    Expr x_g_stride, dy_g_stride;  // the activations' group strides (nxc_sg: a pair's line)
    // nxc and ncx (not ncx_db, nor the plain-x nxc_xp and ncx_xp) on CPUs, native float types: x_in reads x_blocks (ci_i, ci_o,
    // x, y, z, g, n), x staged in blocks of `x_block` channels (the tile's ci_tile) with each
    // block's pixels contiguous; 0 where x_in reads x itself.
    Func x_blocks;
    int x_block = 0;
    // ncx, 32-bit, blocks of 8 or more (AVX-512 and ARM64 f32): x_blocks is copied by a
    // plain sweep that the TransposedRows pass transposes (schedules/cpu_bwd_weights.cpp).
    bool x_blocks_swept() const { return rows_pass && x_block >= 8; }
    Var ci{"ci"}, co{"co"}, kx{"kx"}, ky{"ky"}, kz{"kz"}, g{"g"};
    RDom r;          // (ox, oy, oz, n): the reduction over batch and output positions
    ScheduleParams tuned;  // tunable parameters (`convgrad tune`); defaults where unset
    Expr unit_stride, stride_x;
    Expr dilation_x;  // the taps' spacing along x (1: undilated)
    Expr co_extent, ci_extent, g_extent, kx_extent, ky_extent, kz_extent;
    // dw's strides: HWIO has co innermost (stride 1); OIHW has the taps innermost and ci next.
    Expr dw_co_stride, dw_ci_stride, dw_g_stride;
    // The NXC tile's input channels (its broadcasts of x per position): a tuned value, else
    // 8 with 32 vector registers and 4 with 16.
    static int ci_tile(const ScheduleParams &tuned, const Target &t) {
        return tuned.get("ci_tile", vector_registers(t) == 32 ? 8 : 4);
    }
    // True for a square 2-D filter of taps x taps.
    Expr square_2d(int taps) const { return square_2d_filter(kx_extent, ky_extent, kz_extent, taps); }
    // Sizes for cache blocking the reduction: its rows (n, oz, oy) and their positions
    // (ox_extent each), and the bytes of x and dy one row of dy touches (all groups).
    Expr reduction_rows, oy_extent, ox_extent, row_bytes;
};

void schedule_bwd_weights_cpu(BwdWeightsStages &s, const Target &target, Layout layout);
void schedule_bwd_weights_gpu(BwdWeightsStages &s, const Target &target, Layout layout);  // CUDA, OpenCL

}  // namespace convgrad::gen
