// CPU schedules of the data gradient.
//
// NXC: a register tile of (2 channel vectors) x (`pixels` output positions along x), reduced
//   over output channels and taps with the accumulators in registers; threads own whole rows
//   (y, z, g, n). The filter is packed once with c innermost, so each (co, tap) step loads two
//   contiguous vectors whatever the user's filter layout. Problems too small for a tile fall
//   back to one channel vector per position, then to scalars.
// NXG (depthwise, channels contiguous across groups): vectors over the groups, the same tile
//   over x.
// NCX: a register tile of (2 vectors along x, contiguous) x (8 channels), the NXC tile with
//   the roles swapped, over a staged dy.
// Any: the NXC fallback structure without stride assumptions (gathers).
//
// Tile sizes follow the register file: 32 vector registers with AVX-512, 16 otherwise.
// Every tiled branch also has a unit-stride specialisation that drops the tap predicate.
#include "../generators/bwd_data.h"

namespace convgrad::gen {

void schedule_bwd_data_cpu(BwdDataStages &s, const Target &target, Layout layout) {
    // Threads own rows: nested parallel loops over y and n rather than one fused loop. Halide
    // 14 gives the dims of a fused loop their whole range in bounds inference, so the tile's
    // accumulators (computed inside it) were sized by the full y extent: a heap allocation per
    // tile instead of registers (mb_dw32_112: 2.1 -> 0.87 ms; rn50_3x3_56: 12.0 -> 9.2 ms).
    const auto parallel_rows = [&](Stage st) { st.parallel(s.y).parallel(s.n); };
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    // dy is staged (converted, zero border included) once before the tiles when its
    // elements are converted in software (16-bit), and in the dense NXC tiles, where each dy
    // element feeds many FMAs and the staged copy removes the boundary select from every
    // broadcast (rn50_3x3_56: 13.1 -> 10.7 ms). Not for depthwise: memory bound, the extra
    // copy costs more than it saves (mb_dw32_112: 4.4 -> 13.6 ms).
    if (s.staged_inputs || layout == Layout::NXC) {
        const std::vector<Var> a = s.dy_in.args();
        s.dy_in.compute_root().parallel(a[5]).parallel(a[2]);
    }
    const RVar co = s.r[0], kx = s.r[1], ky = s.r[2], kz = s.r[3];
    const int pixels = vector_registers(target) == 32 ? 6 : 3;  // 2 x pixels accumulators
    Var c_o("c_o"), c_i("c_i"), x_o("x_o"), x_i("x_i"), g_o("g_o"), g_i("g_i");

    if (layout == Layout::NCX) {
        // The NXC tile with the roles swapped: (2 vectors along x) x (c_tile channels); per
        // (co, tap) one dy vector is shared by c_tile broadcast weights. dy is staged (zero
        // border included) so its shifted rows load without per-lane selects.
        const int c_tile = vector_registers(target) == 32 ? 8 : 4;
        const Expr tiled = s.x_extent >= 2 * vec && s.c_extent >= c_tile;
        auto nest = [&](Stage st, int x_factor, int c_factor) {
            st.split(s.x, x_o, x_i, x_factor).split(s.c, c_o, c_i, c_factor)
                .reorder(x_i, c_i, x_o, c_o, s.y, s.z, s.g, s.n);
            parallel_rows(st);
        };
        // Rows too short for a vector (7x7 layers): 8 independent scalar chains per pixel.
        const Expr narrow = s.c_extent >= c_tile;
        Stage tiled_dx = s.dx.specialize(tiled), vector_dx = s.dx.specialize(s.x_extent >= vec),
              narrow_dx = s.dx.specialize(narrow);
        nest(tiled_dx, 2 * vec, c_tile);
        tiled_dx.vectorize(x_i, vec).unroll(c_i);
        nest(vector_dx, vec, 1);
        vector_dx.vectorize(x_i);
        nest(narrow_dx, 1, c_tile);
        narrow_dx.unroll(c_i);
        nest(s.dx, 1, 1);
        s.acc.compute_at(s.dx, x_o).reorder_storage(s.x, s.c, s.y, s.z, s.g, s.n);  // x vectors contiguous
        Var x_vo("x_vo"), x_vi("x_vi");
        s.acc.specialize(tiled).split(s.x, x_vo, x_vi, vec).vectorize(x_vi).unroll(x_vo).unroll(s.c);
        Stage acc_tiled = s.acc.update().specialize(tiled);
        acc_tiled.split(s.x, x_vo, x_vi, vec)
            .reorder(x_vi, x_vo, s.c, co, kx, ky, kz)
            .vectorize(x_vi).unroll(x_vo).unroll(s.c);
        acc_tiled.specialize(s.unit_stride);
        Stage acc_vector = s.acc.update().specialize(s.x_extent >= vec);
        acc_vector.reorder(s.x, s.c, co, kx, ky, kz).vectorize(s.x, vec);
        acc_vector.specialize(s.unit_stride);
        // No narrow specialisation of acc's init: with it, rows of 16-31 pixels (dx in its
        // vector branch, acc's init then in its narrow one) gave wrong results; the update's
        // narrow branch alone is correct (tests: TfRandom, TfEdge.VectorSizedLayers).
        Stage acc_narrow = s.acc.update().specialize(narrow);
        acc_narrow.reorder(s.c, s.x, co, kx, ky, kz).unroll(s.c);
        acc_narrow.specialize(s.unit_stride);
        s.acc.update().reorder(s.x, s.c, co, kx, ky, kz);
        s.acc.update().specialize(s.unit_stride);
        // Staged with x innermost, as the tile reads it (default storage would put co first
        // and turn every x-vector into a gather).
        const std::vector<Var> a = s.dy_in.args();  // (co, x, y, z, g, n)
        s.dy_in.compute_root()
            .reorder_storage(a[1], a[0], a[2], a[3], a[4], a[5])
            .reorder(a[1], a[0], a[2], a[3], a[4], a[5])
            .vectorize(a[1], vec, TailStrategy::GuardWithIf)
            .parallel(a[5]).parallel(a[2]);
        return;
    }

    // The tiled loop nest shared by NXC (tiles over c) and NXG (tiles over g): the vector
    // dim `v` (c or g) split into its tile, x split into `pixels`, rows parallel.
    const bool groups_vectorised = layout == Layout::NXG;
    const Var v = groups_vectorised ? s.g : s.c;
    const Expr v_extent = groups_vectorised ? s.g_extent : s.c_extent;
    Var &v_o = groups_vectorised ? g_o : c_o, &v_i = groups_vectorised ? g_i : c_i;
    auto nest = [&](Stage st, int v_factor, int x_factor) {
        st.split(v, v_o, v_i, v_factor).split(s.x, x_o, x_i, x_factor);
        if (groups_vectorised) {
            st.reorder(v_i, x_i, s.c, v_o, x_o, s.y, s.z, s.n);
        } else {
            st.reorder(v_i, x_i, v_o, x_o, s.y, s.z, s.g, s.n);
        }
        parallel_rows(st);
    };
    // Branches, widest first: (vector-dim tile, vector width, pixels). Each keeps
    // (tile / width) x pixels accumulator chains in flight. Small groups (ResNeXt: 4-8
    // channels per group) use half-width vectors, still over a row of pixels: one chain per
    // output would leave the FMA pipes idle for its latency.
    struct Branch {
        Expr condition;
        int tile, lanes, pixels;
    };
    const int wide = groups_vectorised ? vec : 2 * vec;
    // Rows that are a multiple of 7 pixels (every ResNet and MobileNet stage: 7, 14, 28, 56,
    // 112) get 7-pixel tiles: a 6-pixel tile over a 7-wide row computes 12 pixels for 7.
    std::vector<Branch> branches;
    if (pixels == 6) branches.push_back({v_extent >= wide && s.x_extent % 7 == 0, wide, vec, 7});
    branches.push_back({v_extent >= wide && s.x_extent >= pixels, wide, vec, pixels});
    if (wide > vec) branches.push_back({v_extent >= vec && s.x_extent >= pixels, vec, vec, pixels});
    branches.push_back({v_extent >= vec / 2 && s.x_extent >= pixels, vec / 2, vec / 2, pixels});
    branches.push_back({v_extent >= vec, vec, vec, 1});
    branches.push_back({v_extent >= vec / 2, vec / 2, vec / 2, 1});
    for (const Branch &b : branches) {  // specialise before splitting: own factors, same names
        Stage st = s.dx.specialize(b.condition);
        nest(st, b.tile, b.pixels);
        st.vectorize(v_i, b.lanes).unroll(x_i);  // stores only; the tile's math is in acc
    }
    nest(s.dx, 1, 1);

    // Accumulators live per tile: tile x pixels values, all in registers.
    s.acc.compute_at(s.dx, v_o);
    if (groups_vectorised) s.acc.reorder_storage(s.g, s.c, s.x, s.y, s.z, s.n);  // vectors contiguous
    Var v_vo("v_vo"), v_vi("v_vi");
    // Innermost: the vector dim(s) and the tile's pixels, then the reduction. reorder() only
    // permutes the dims it is given, so every tile dim is listed (an unlisted v_vo stayed
    // outside the reduction and duplicated it per channel vector).
    const auto order = [&](Stage st, std::vector<VarOrRVar> inner) {
        inner.push_back(s.x);
        if (groups_vectorised) inner.push_back(s.c);
        for (const RVar &r : {co, kx, ky, kz}) inner.push_back(r);
        st.reorder(inner);
    };
    // GuardWithIf: Halide cannot tell, inside one dx branch, that acc's wider branches are
    // not taken, so their splits would round the tile up and make its allocation size
    // dynamic (a heap allocation per tile; the stem's scalar path ran 2x slower). The guard
    // costs nothing where it is taken: there the tile is a whole number of vectors.
    for (const Branch &b : branches) {
        s.acc.specialize(b.condition).split(v, v_vo, v_vi, b.lanes, TailStrategy::GuardWithIf)
            .vectorize(v_vi).unroll(v_vo).unroll(s.x);
        Stage st = s.acc.update().specialize(b.condition);
        st.split(v, v_vo, v_vi, b.lanes, TailStrategy::GuardWithIf);
        order(st, {v_vi, v_vo});
        st.vectorize(v_vi).unroll(v_vo).unroll(s.x);
        st.specialize(s.unit_stride);
    }
    // Fewer channels than half a vector (an RGB stem's 3): one output per step, its long
    // reduction over output channels split into vector lanes (rfactor) and summed after.
    // Left to LLVM, this loop was vectorised or not depending on unrelated schedule changes
    // (rn50_stem: 227 vs 514 ms).
    RVar co_o("co_o"), co_i("co_i");
    Var lane("lane");
    order(s.acc.update(), {v});
    Func lanes = s.acc.update().split(co, co_o, co_i, vec, TailStrategy::GuardWithIf).rfactor(co_i, lane);
    lanes.compute_at(s.acc, Var::outermost()).vectorize(lane);
    lanes.update().reorder(lane, co_o, kx, ky, kz).vectorize(lane);
    lanes.update().specialize(s.unit_stride);

    // The filter, packed once so the vector dim is contiguous for each (co, tap) whatever the
    // user's filter layout (HWIO has c strided by C_out; OIX has g strided by C_out/G*taps).
    const std::vector<Var> w_args = s.w_local.args();  // (ci, co, kx, ky, kz, g)
    s.w_local.compute_root();
    if (groups_vectorised) s.w_local.reorder_storage(w_args[5], w_args[0], w_args[1], w_args[2], w_args[3], w_args[4]);
}

}  // namespace convgrad::gen
