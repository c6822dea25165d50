// CPU schedule of the data gradient's Winograd variant (nxc_wg, generators/winograd.h).
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
#include "../generators/winograd.h"

namespace convgrad::gen {

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
    const Expr want = s.block_tiles();
    const Expr image_tiles = s.tiles_x * s.tiles_y;
    const Expr whole_images = image_tiles < want;
    const Expr rows = select(whole_images, s.tiles_y, clamp((want + s.tiles_x - 1) / s.tiles_x, 1, s.tiles_y));
    const Expr images = select(whole_images, clamp((want + image_tiles - 1) / image_tiles, 1, max((s.images + 1) / 2, 1)), 1);
    // dx: 4x4 tiles, unrolled (the output transform's cases), channels vectorised.
    s.dx.split(s.x, xo, jx, m, TailStrategy::GuardWithIf)
        .split(s.y, yo, s.jy, m, TailStrategy::GuardWithIf)
        .split(yo, yb, yr, rows, TailStrategy::GuardWithIf)
        .split(s.n, nb, ni, images, TailStrategy::GuardWithIf)
        .reorder(s.c, jx, s.jy, xo, yr, s.z, ni, yb, nb, s.g)
        .vectorize(s.c, vec)
        .unroll(jx)
        .unroll(s.jy)
        .parallel(yb)
        .parallel(nb);
    s.out_rows.compute_at(s.dx, xo).reorder(s.c, s.nu, s.jy).vectorize(s.c, vec).unroll(s.nu).unroll(s.jy);

    // The products: per (nu, xi), register tiles of vectors x tiles over every dy channel.
    s.m.compute_at(s.dx, yb)
        .split(s.c, c_o, c_i, vec * vectors)
        .split(s.t, t_o, t_i, tiles, TailStrategy::ShiftInwards)
        .reorder(c_i, t_i, c_o, t_o, s.nu, s.xi, s.g)
        .vectorize(c_i, vec)
        .unroll(c_i)
        .unroll(t_i);
    s.m_acc.compute_at(s.m, c_o).vectorize(s.c, vec).unroll(s.c).unroll(s.t);
    s.m_acc.update().reorder(s.c, s.t, s.r).vectorize(s.c, vec).unroll(s.c).unroll(s.t);

    // dy's tiles, per block; each tile's row transforms per tile, for every dy channel.
    s.v.compute_at(s.dx, yb).reorder(s.co, s.nu, s.xi, s.t, s.g).vectorize(s.co, vec).unroll(s.nu).unroll(s.xi);
    s.v_rows.compute_at(s.v, s.t).reorder(s.co, s.nu, s.a).vectorize(s.co, vec).unroll(s.nu).unroll(s.a);

    // The filter's transform, once per call.
    s.u.compute_root().reorder(s.c, s.xi, s.nu, s.co, s.g).vectorize(s.c, vec).unroll(s.xi).parallel(s.co);
    s.u_rows.compute_at(s.u, s.co).reorder(s.c, s.nu, s.ky).vectorize(s.c, vec).unroll(s.nu);
    // The filter's copy: where its output channels are contiguous (HWIO), vectors of dx
    // channels sweep them plainly, which the TransposedRows pass turns into register
    // transposes (rn50_3x3_14: the copy's gathers took 9 % of the call); else gathers.
    Var v_o("v_o"), v_i("v_i");
    s.w_local.compute_root();
    s.w_local.specialize(s.w_co_stride == 1)
        .split(s.c, v_o, v_i, vec)
        .reorder(v_i, s.co, v_o, s.kx, s.ky, s.g)
        .vectorize(v_i)
        .parallel(v_o);
    s.w_local.vectorize(s.c, vec).parallel(s.co);
}

}  // namespace convgrad::gen
