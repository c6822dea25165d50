// The data-gradient pipeline's stages, shared between its algorithm (generators/) and its
// schedules (schedules/), so schedules can be written per target family without touching the
// algorithm.
#pragma once

#include "generator_common.h"

namespace convgrad::gen {

struct BwdDataStages {
    Func dx;         // output, storage type
    Func dx_local;   // dx's values (schedules may stage them in another order; else inlined)
    Func acc;        // accumulator (float32 for 16-bit floats)
    Func w_local;    // the filter, as the kernel reads it (schedules may pack it)
    // The channel-slab variant (_cs): the tiles read w_pack (c % slab, co, kx, ky, kz,
    // c / slab, g), the filter in slabs of `slab` dx channels, the tile's width; 0 otherwise.
    int slab = 0;
    bool rows_pass = false;  // NCX, 32-bit: the pipeline runs the TransposedRows pass (dx's copy)
    Expr whole_slabs;  // w's input channels are whole slabs (the registry's promise for _cs)
    Expr w_ci_stride;  // w's input-channel stride (OIX 1x1: 1)
    Expr w_co_stride;  // w's output-channel stride (HWIO: 1)
    Func w_pack;
    Func dy_in;      // dy (zero-padded) in the accumulator type (schedules may stage it)
    bool staged_inputs = false;  // 16-bit storage: convert inputs once, not per use
    Var c{"c"}, x{"x"}, y{"y"}, z{"z"}, g{"g"}, n{"n"};
    // x-phase variants (stride 2 along x): x above is q, and p is the phase (canonical.h).
    bool phased = false;
    Var p{"p"};
    // Pixel-vector variants (_px): layers with at most kPixelVectorChannels input channels per
    // group (RGB stems, NXC) and depthwise layers in channels-first layouts (NCG) vectorise
    // over pixels along x instead of channels.
    bool pixel_vectors = false;
    // The small-group variant (nxc_sg: fewer than kSmallGroupChannels dy channels per group,
    // e.g. ResNeXt's 8): dy is staged with kSmallGroupChannels slots per pixel, so the tiles'
    // pixels are a constant stride apart (cpu_bwd_data.cpp).
    bool small_groups = false;
    // Its x86 form for native types (`pairs`: an even number of groups, the registry's
    // promise): each vector holds a pair of groups, the group innermost. acc is then
    // (gpar, c, x, y, z, gp, n) for group 2*gp + gpar, and the tiles read dy_pairs and
    // w_pairs, dy and the filter in that order (schedules/cpu_bwd_data_pairs.cpp).
    bool pairs = false;
    Func dy_pairs, w_pairs;
    Var gpar{"gpar"}, gp{"gp"};
    Expr dy_g_stride;  // dy's group stride (pairs: a pair's two groups one vector apart when it is half a vector)
    // The pointwise variants (nxc_pw, ncx_px_pw): dy read in place, no staged rows
    // (bwd_data_generator.cpp).
    bool pointwise = false;
    // The in-place variant (nxg_ip): dy read in place through its zero padding, no staged
    // rows (schedules/cpu_bwd_data.cpp).
    bool dy_in_place = false;
    RDom r;          // (co, kx, ky, kz)
    ScheduleParams tuned;  // tunable parameters (`convgrad tune`); defaults where unset
    // dx rows per block of dy staged in cache (NXC, NXG and the _px variants): a 3x3 filter
    // re-stages (block + 2) / block of dy's rows.
    int block_rows() const { return tuned.get("block_rows", 8); }
    // Vectors of the vector dim per tile (the channel-slab variants' slab). The pointwise
    // variant, with no taps, takes 4 of them (x 6 pixels) where 32 registers hold them: per
    // output channel 10 loads for 24 FMAs, against 9 for 14 (rn50_1x1_56, kernel alone 1.13x).
    int tile_vectors(const Target &t) const {
        return tuned.get("vectors", pointwise && vector_registers(t) == 32 ? 4 : 2);
    }
    Expr unit_stride;     // true when every spatial stride is 1
    // The strides the registry gives a variant, so that its tap stages hold branches for
    // those alone (a branch for strides it is never given was dead code that LLVM compiled
    // all the same): the x-phase variants take stride 2 along x, so no unit-stride branch;
    // the unit-stride pixel-vector ones, the pointwise ones and the in-place one (nxg_ip,
    // unit dilations too) take unit strides alone, so that branch and a failure
    // (specialize_fail: an error status) for any other call.
    bool may_take_unit_strides() const { return !phased; }
    bool unit_strides_only() const { return !phased && (pixel_vectors || pointwise || dy_in_place); }
    Expr stride_2;        // true for strides (2, 2, 1) along (x, y, z): 2-D downsampling layers
    Expr unit_dilation;   // true when every spatial dilation is 1
    Expr c_extent, x_extent, y_extent, g_extent, n_extent;
    Expr kx_extent, ky_extent, kz_extent;  // the filter's taps
    // True for a square 2-D filter of taps x taps.
    Expr square_2d(int taps) const { return square_2d_filter(kx_extent, ky_extent, kz_extent, taps); }
};

// The most input channels per group the pixel-vector variants are built for (the registry
// routes no wider layers to them).
constexpr int kPixelVectorChannels = 4;
// The small-group variant (nxc_sg) stages dy with this many slots per pixel; the registry
// sends it fewer dy channels per group (kernel_registry.h).
constexpr int kSmallGroupChannels = 16;
// The channel-slab variants (_cs) take dx channels per group in multiples of this: every
// target's tile width divides it (2 vectors: 32 f32 lanes with AVX-512, 16 with AVX2, 8 NEON).
constexpr int kChannelSlab = 32;
// The pointwise variant (nxc_pw) takes dx channels per group in multiples of this: every
// target's pointwise tile width divides it (4 vectors: 64 f32 lanes with AVX-512).
constexpr int kPointwiseSlab = 64;

void schedule_bwd_data_cpu(BwdDataStages &s, const Target &target, Layout layout);
void schedule_bwd_data_cpu_pixels(BwdDataStages &s, const Target &target, Layout layout);  // _px variants
void schedule_bwd_data_cpu_pairs(BwdDataStages &s, const Target &target);  // nxc_sg on x86
void schedule_bwd_data_gpu(BwdDataStages &s, const Target &target, Layout layout);  // CUDA, OpenCL

}  // namespace convgrad::gen
