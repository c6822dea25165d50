// CPU schedules of the Winograd variants (nxc_wg, generators/winograd.h): the data
// gradient's here, the filter gradient's below.
//
// The transformed filter u (36 x C_in x C_out per group) is computed once per call. Threads
// own blocks of whole tile rows of one image (at least block_tiles() tiles where the image
// has them): per block, dy's transformed tiles v, then the 36 matrix products m, then dx's
// tiles, each 4x4 tile read out of m while its products are still in cache. The products
// are register tiles of `vectors` vectors of dx channels by `tiles` tiles, over every dy
// channel: per dy channel `vectors` loads of u and `tiles` broadcasts of v for
// vectors x tiles FMAs (prototype on rn50_3x3_56's data gradient, AVX-512: 2 x 8 and 4 x 7
// within 1 %; 2 x 8 fits the 14x14 layers' blocks better).
// Blocks of one tile row (14 tiles) ran rn50_3x3_56 in 3.6 ms, 2.7x the direct kernel;
// whole 56x56 images, 5.8 ms: a block's v and m (2 x 129 KB) and u (590 KB) then stay in L2.
#include "../generators/bwd_data.h"  // kChannelSlab
#include "../generators/winograd.h"
#include "cpu_staging.h"

namespace convgrad::gen {
namespace {

// A tile transform `f` (c, nu, xi, t, ...) and its row pass `rows` (c, a, nu, t, ...), one
// vector of channels at a time: the row pass's 36 vectors are a constant-size buffer
// (registers and stack), where per tile, over every channel, it was a heap allocation
// (rn50_3x3_56's filter gradient: malloc and free took 14 % of the call).
void transform_per_vector(Func f, Func rows, const Var &c, const Var &nu, const Var &xi, const Var &a, const Var &t,
                          int vec) {
    Var c_o("c_o"), c_i("c_i");
    f.split(c, c_o, c_i, vec).reorder(c_i, nu, xi, c_o, t).vectorize(c_i).unroll(nu).unroll(xi);
    rows.compute_at(f, c_o).reorder(c, nu, a).vectorize(c, vec).unroll(nu).unroll(a);
}

}  // namespace

void schedule_bwd_data_cpu_winograd(WinogradDataStages &s, const Target &target) {
    const Type at = s.m_acc.output_types()[0];
    const int vec = target.natural_vector_size(at);
    const int vectors = s.tuned.get("wg_vectors", 2);
    // Accumulators, the u vectors and a broadcast within the register file.
    const int tiles = s.tuned.get("wg_tile_count", vector_registers(target) == 32 ? 8 : 6);
    constexpr int m = kWinogradTile;
    Var xo("xo"), jx("jx"), yo("yo"), yb("yb"), yr("yr"), nb("nb"), ni("ni");
    Var c_o("c_o"), c_i("c_i"), t_o("t_o"), t_i("t_i");

    // Blocks: R tile rows of one image, or B whole images (R = every row) where an image has
    // fewer than block_tiles() tiles; either way one run of flat tile numbers. At most half
    // the batch per block, so two threads have work. Threads take blocks of images and, nested,
    // blocks of rows (fused, the loops' symbolic extents made Halide's bounds of dx's batch and
    // group dims symmetric about 0: a division by an extent of unknown sign).
    // 3-D layers: blocks of 4x the tiles (u3d_3x3x3_32, kernel alone: 16 tiles 7.8 ms, 32 6.8,
    // 64 (a whole 32x32 slice) 6.5; 2-D layers 0.98-0.99x with 32 or 64).
    const Expr want = select(s.kz_extent > 1, 4, 1) * s.block_tiles();
    const Expr image_tiles = s.tiles_x * s.tiles_y;
    const Expr whole_images = image_tiles < want;
    const Expr rows = select(whole_images, s.tiles_y, clamp((want + s.tiles_x - 1) / s.tiles_x, 1, s.tiles_y));
    const Expr images = select(whole_images, clamp((want + image_tiles - 1) / image_tiles, 1, max((s.images + 1) / 2, 1)), 1);
    // dx's tiles: 4x4, unrolled (the output transform's cases), channels vectorised.
    // NXC: dx itself, in the blocks' loops. NCX: dx_tiles, per block; dx copies it in the
    // blocks' loops, vectors along x over a loop of channels (rewritten by TransposedRows
    // into register transposes).
    s.dx.split(s.y, yo, s.jy, m, TailStrategy::GuardWithIf)
        .split(yo, yb, yr, rows, TailStrategy::GuardWithIf)
        .split(s.n, nb, ni, images, TailStrategy::GuardWithIf);
    if (s.channels_first) {
        s.dx.split(s.x, xo, jx, vec, TailStrategy::GuardWithIf)
            .reorder(jx, s.c, xo, s.jy, yr, s.z, ni, yb, nb, s.g)
            .vectorize(jx);
        s.dx_tiles.compute_at(s.dx, s.z)
            .split(s.x, xo, jx, m, TailStrategy::GuardWithIf)
            .split(s.y, yo, s.jy, m, TailStrategy::GuardWithIf)
            .split(s.c, c_o, c_i, vec)
            .reorder(c_i, jx, s.jy, c_o, xo, yo, s.z, s.n, s.g);
        // dy's rows the block reads, channels innermost: vectors of channels over a plain
        // loop along x (TransposedRows' form).
        const std::vector<Var> d = s.dy_rows.args();  // (c, x, y, z, g, n)
        s.dy_rows.store_at(s.dx, ni)
            .compute_at(s.dx, s.z)
            .fold_storage(d[3], kWinogradMaxDepthTaps)
            .split(d[0], c_o, c_i, vec)
            .reorder(c_i, d[1], c_o, d[2], d[3], d[4], d[5])
            .vectorize(c_i);
        // (Contiguous pixels: the form above. Else, the dilation phases' every other pixel,
        // gathers and scatters.)
        s.dy_rows.specialize(s.dy_x_stride == 1);
    } else {
        s.dx.split(s.x, xo, jx, m, TailStrategy::GuardWithIf)
            .split(s.c, c_o, c_i, vec)
            .reorder(c_i, jx, s.jy, c_o, xo, yr, s.z, ni, yb, nb, s.g);
    }
    s.dx.parallel(yb).parallel(nb);
    if (s.channels_first) s.dx.specialize(s.dx_x_stride == 1);
    s.dx_tiles.vectorize(c_i).unroll(jx).unroll(s.jy);
    // (Per vector of channels: a constant-size buffer, as transform_per_vector's.)
    s.out_rows.compute_at(s.dx_tiles, c_o).reorder(s.c, s.nu, s.jy).vectorize(s.c, vec).unroll(s.nu).unroll(s.jy);

    // The products: per (nu, xi), register tiles of vectors x tiles over every dy channel.
    s.m.compute_at(s.dx, s.z)
        .split(s.c, c_o, c_i, vec * vectors)
        .split(s.t, t_o, t_i, tiles, TailStrategy::ShiftInwards)
        .reorder(c_i, t_i, c_o, t_o, s.nu, s.xi, s.g)
        .vectorize(c_i, vec)
        .unroll(c_i)
        .unroll(t_i);
    s.m_acc.compute_at(s.m, c_o).vectorize(s.c, vec).unroll(s.c).unroll(s.t);
    s.m_acc.update().reorder(s.c, s.t, s.r.x, s.r.y).vectorize(s.c, vec).unroll(s.c).unroll(s.t);

    // dy's tiles, per block; each tile's row transforms per tile, for every dy channel. 3-D
    // layers: per depth slice, in a serial loop whose earlier slices' tiles are kept (Halide's
    // sliding window: each of dy's slices transformed once per block, not once per depth tap;
    // kWinogradMaxDepthTaps slices stored, folded), and so are NCX's copies
    // of dy's rows (dy_rows).
    transform_per_vector(s.v, s.v_rows, s.co, s.nu, s.xi, s.a, s.t, vec);
    s.v.store_at(s.dx, ni).compute_at(s.dx, s.z).fold_storage(s.z, kWinogradMaxDepthTaps);

    // The filter's transform, once per call.
    s.u.compute_root().reorder(s.c, s.xi, s.nu, s.co, s.g).vectorize(s.c, vec).unroll(s.xi).parallel(s.co);
    s.u_rows.compute_at(s.u, s.co).reorder(s.c, s.nu, s.ky).vectorize(s.c, vec).unroll(s.nu);
    // The filter's copy: where its output channels are contiguous (HWIO), vectors of dx
    // channels sweep them plainly, which the TransposedRows pass turns into register
    // transposes (rn50_3x3_14: the copy's gathers took 9 % of the call); else gathers.
    // Threads take blocks of dx channels over every tap: one parallel loop a call. (One per
    // tap, nine a call, was 1.09-1.10x slower on 64 channels on 7x7 over 8 images, kernel
    // alone on the Zen 5.)
    Var v_o("v_o"), v_i("v_i");
    s.w_local.compute_root();
    s.w_local.specialize(s.w_co_stride == 1)
        .split(s.c, v_o, v_i, vec)
        .reorder(v_i, s.co, s.kx, s.ky, v_o, s.g)
        .vectorize(v_i)
        .parallel(v_o);
    // OIHW: each dx channel's taps contiguous, so vectors of dx channels sweep the taps
    // along x plainly (TransposedRows' form again; rn50_3x3_14's gathers took 10 % of the call).
    s.w_local.specialize(s.w_kx_stride == 1)
        .split(s.c, v_o, v_i, vec)
        .reorder(v_i, s.kx, s.ky, v_o, s.co, s.g)
        .vectorize(v_i)
        .parallel(s.co);
    s.w_local.vectorize(s.c, vec).parallel(s.co);
}

// The filter gradient's (WinogradFilterStages): threads own chunks of blocks of tiles, each
// adding its blocks' products into its own partial sums (36 x C_in x C_out), and, nested,
// the products' 6 rows of nu; then per dy channel the chunks' sums are added and transformed
// to the taps. Per block, x's and dy's transformed tiles first (in cache), then the
// products: register tiles of `vectors` vectors of one side's channels (the filter's
// contiguous ones: x's in NCX, dy's in NXC) by `cols` of the other's over the block's tiles
// (per tile `vectors` loads and `cols` broadcasts for vectors x cols FMAs). Layers with many channels (256 x 256: 9.4 MB of sums) take one
// chunk, and the rows of nu, the blocks' tiles and the sums' zeros their threads.
// rn50_3x3_14 (NHWC, kernel alone): 8.4 ms with the chunks' sums added at root (a copy of
// 9.4 MB, 2 ms), 6.9 ms per dy channel, 5.0 ms with the one chunk's transforms and zeros
// in parallel (they had run on one thread; with 4 chunks, on rn50_3x3_56, tasks per tile
// ran 0.85x).
void schedule_bwd_weights_cpu_winograd(WinogradFilterStages &s, const Target &target) {
    const Type at = s.block.output_types()[0];
    const int vec = target.natural_vector_size(at);
    const int vectors = s.tuned.get("wg_vectors", 2);
    // (cols divides kChannelSlab: part's split of bd must be exact to unroll the tiles.)
    const int cols = s.tuned.get("wg_tile_count", vector_registers(target) == 32 ? 8 : 4);
    if (kChannelSlab % (vec * vectors) != 0 || kChannelSlab % cols != 0) {
        throw std::invalid_argument("convgrad: the Winograd filter gradient's register tile must divide the registry's slab of " +
                                    std::to_string(kChannelSlab) + " channels");
    }
    // The vector dim `vd` (the register tiles' vectors, the sums' and dw's innermost) is the
    // filter's contiguous channel dim: ci in NCX (OIHW: taps, then ci), co in NXC (HWIO: co
    // innermost), so the final transform stores dw in vectors; `bd`, the other, is broadcast
    // (vx and wy both hold channels innermost). With ci vectors in HWIO, each of dw's vector
    // stores was a scatter, lanes 1 KB apart: rn50_3x3_14 NHWC (kernel alone, profiled) 0.7-0.9
    // ms of ~5 in that store, 0.27 after. Kernel alone, bit-identical: 1.04-1.19x.
    const bool co_vectors = !s.channels_first;
    const Var &vd = co_vectors ? s.co : s.ci, &bd = co_vectors ? s.ci : s.co;
    Var vd_o("vd_o"), vd_i("vd_i"), bd_o("bd_o"), bd_i("bd_i");

    s.dw.reorder(vd, s.kx, s.ky, s.kz, bd, s.g).vectorize(vd, vec).unroll(s.kx).unroll(s.ky).parallel(bd);
    s.dw_rows.compute_at(s.dw, bd).reorder(vd, s.kx, s.xi).vectorize(vd, vec).unroll(s.kx).unroll(s.xi);
    s.sums.compute_at(s.dw, bd).vectorize(vd, vec);
    s.sums.update().reorder(vd, s.r_chunk, s.nu, s.xi, bd, s.g).vectorize(vd, vec);
    s.part.compute_root().vectorize(vd, vec).parallel(s.k).parallel(s.xi);
    // The partial sums stored with each `bd` channel's 36 products together: the final
    // transform, per bd channel, then reads one run of 36 x vd values. Stored (ci, co, nu,
    // xi), it read 36 runs 256 KB apart on rn50_3x3_14 (256 x 256 channels), the same L2
    // sets: NCHW kernel alone 1.09-1.14x (1.03x in a later pair); rn50_3x3_56 (64 x 64, sums
    // in L2) and u3d_3x3x3_32 unchanged (0.96-1.02x).
    s.part.reorder_storage(vd, s.nu, s.xi, bd, s.kz, s.g, s.k);
    s.part.update()
        .split(vd, vd_o, vd_i, vec * vectors, TailStrategy::RoundUp)
        .split(bd, bd_o, bd_i, cols, TailStrategy::RoundUp)
        .reorder(vd_i, bd_i, vd_o, bd_o, s.nu, s.kz, s.xi, s.r_block, s.g, s.k)
        .vectorize(vd_i, vec)
        .parallel(s.k)
        .parallel(s.xi);
    // (One block at a time, which Halide's bounds of k * blocks + r_block did not show: the
    // register tile was a heap allocation per tile.)
    s.block.compute_at(s.part, vd_o).bound_storage(s.b, 1).reorder_storage(vd, bd, s.nu, s.xi, s.kz, s.g, s.b)
        .vectorize(vd, vec).unroll(vd).unroll(bd);
    s.block.update().reorder(vd, bd, s.r_tile, s.nu, s.xi).vectorize(vd, vec).unroll(vd).unroll(bd);

    transform_per_vector(s.vx, s.vx_rows, s.ci, s.nu, s.xi, s.a, s.t, vec);
    transform_per_vector(s.wy, s.wy_rows, s.co, s.nu, s.xi, s.a, s.t, vec);
    s.vx.compute_at(s.part, s.r_block);
    s.wy.compute_at(s.part, s.r_block);
    s.vx.specialize(s.chunks == 1).parallel(s.t);
    s.wy.specialize(s.chunks == 1).parallel(s.t);
    // NCX: the whole copies, in parallel over rows, each vector of channels sweeping a row
    // plainly (TransposedRows' form).
    if (s.channels_first) {
        stage_vector_dim_innermost(s.x_copy, s.x_copy.args()[0], s.ci_extent, vec, true, nullptr, true);
        stage_vector_dim_innermost(s.dy_copy, s.dy_copy.args()[0], s.co_extent, vec, true, nullptr, true);
        // (Contiguous pixels: that form. Else, the dilation phases' every other pixel, gathers.)
        s.x_copy.specialize(s.x_x_stride == 1);
        s.dy_copy.specialize(s.dy_x_stride == 1);
    }
}

}  // namespace convgrad::gen
