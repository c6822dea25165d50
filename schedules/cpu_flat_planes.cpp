// CPU schedules of the flat-plane variants (ncg_fp, generators/flat_planes.h): depthwise NCHW
// with unit strides, each (group, image) plane one flat row. The data gradient's first; the
// filter gradient's (each image's planes one row, x read in place) at the end.
//
// Threads own planes. A tile is `px_vectors` vectors of a plane's flat positions (the last
// tile shifts inwards): per tap column kx, one partial sum per vector over the column's
// taps (one unaligned load of dy and one FMA each, the filter values broadcast), then the
// column added under its column test. With 3x3 and 5x5 filters every tap unrolls, so a tile
// is one run of loads at constant offsets. Each plane of dy is copied flat with the zeros
// around it (cpu_staging.h: stage_flat_plane), one contiguous copy: the staged rows of the
// unit-stride row-vector kernel (ncg_px, since removed; a zero border and whole vectors per
// row) cost as much as its tiles on 28x28 planes, and its 28-pixel rows filled 28 of 32 lanes.
#include "../generators/flat_planes.h"
#include "cpu_staging.h"

namespace convgrad::gen {

void schedule_bwd_data_cpu_flat(FlatPlaneDataStages &s, const Target &target) {
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    const int px_vectors = s.tuned.get("px_vectors", vector_registers(target) == 32 ? 4 : 2);
    Var io("io"), ii("ii"), iv("iv"), il("il"), g_o("g_o"), g_i("g_i"), task("task");
    // A thread's task: a block of groups' planes of one image, every plane of it staged
    // before the first is computed (stage_flat_plane below). One plane a task took ~0.3 us on
    // 28x28 planes: the thread pool's overhead per task was 10 % of the call. Staged and
    // computed plane by plane, a 7x7 plane's first loads met the copy's stores still in
    // flight, and each unaligned load that spans two of them waits for both to retire: with
    // 32 planes staged first, 7x7 planes ran 1.37x faster (kernel alone, mb_dw960_7; 28x28 to
    // 112x112 planes unchanged). G/4 planes, 1 to 32: an image makes at least 4 tasks (or
    // one per group, with fewer than 4), so a batch of one still feeds every thread.
    const Expr planes = clamp(s.g_extent / 4, 1, 32);
    const auto nest = [&](Stage st, int width) {
        st.split(s.i, io, ii, width, TailStrategy::ShiftInwards)
            .split(s.g, g_o, g_i, planes, TailStrategy::GuardWithIf)
            .reorder(s.c, ii, io, s.y, s.z, g_i, g_o, s.n)
            .fuse(g_o, s.n, task)
            .parallel(task);
    };
    // The filters whose taps unroll (below), undilated first: the taps' offsets then differ
    // by constants (a row and a pixel), so a tile's loads take few address registers.
    std::vector<Expr> filters;
    for (int taps : {3, 5}) {
        filters.push_back(s.square_2d(taps) && s.unit_dilation);
        filters.push_back(s.square_2d(taps));
    }
    filters.push_back(Internal::const_true());
    // Tiles of px_vectors vectors, then of one (planes narrower than the wide tile), then
    // scalars (planes narrower than a vector); each per filter, so the tile loop holds one
    // filter's code (with the filter's branches inside it, every tile tested them and the
    // loop kept its addresses on the stack: 1.1x slower).
    for (int vectors : {px_vectors, 1}) {
        for (const Expr &filter : filters) {
            Stage st = s.dx.specialize(s.plane >= vectors * vec && filter);
            nest(st, vectors * vec);
            st.split(ii, iv, il, vec).vectorize(il).unroll(iv);
        }
    }
    nest(s.dx, 1);

    // The tile's accumulators and one tap column's partial sums: constant-size vectors
    // (registers) in every branch above.
    const auto vectors_of = [&](Stage st) {
        st.split(s.i, iv, il, vec, TailStrategy::GuardWithIf).vectorize(il).unroll(iv);
    };
    s.acc.compute_at(s.dx, io);
    vectors_of(s.acc);
    Stage au = s.acc.update();
    vectors_of(au);
    au.reorder(il, iv, s.rkx);
    s.part.compute_at(s.acc, s.rkx);
    vectors_of(s.part);
    Stage pu = s.part.update();
    vectors_of(pu);
    pu.reorder(il, iv, s.rky);
    // (A specialisation copies the schedule as it stands: these come last. Inside dx's
    // branch for a filter, Halide keeps only that filter's.)
    for (size_t f = 0; f + 1 < filters.size(); f++) {
        au.specialize(filters[f]).unroll(s.rkx);
        pu.specialize(filters[f]).unroll(s.rky);
    }

    stage_flat_plane(s.dy_in, LoopLevel(s.dx, task), LoopLevel(s.dx, task), vec);
    // The column tests (a few KB) and the filter, once per call.
    compute_column_test(s.col_ok, vec);
    s.w_local.compute_root();
}

// The filter gradient's flat-plane variant (generators/flat_planes.h: FlatPlaneFilterStages).
// Threads own blocks of groups. Per group, per vector of dy's plane, every tap's sum over
// the images stays in a register (3x3 and 5x5 filters: the taps unroll), each image adding
// one load of dy and one unaligned load of x per tap; the masked sums over the plane's
// vectors are then added across lanes.
void schedule_bwd_weights_cpu_flat(FlatPlaneFilterStages &s, const Target &) {
    Var g_o("g_o"), g_i("g_i");
    const std::vector<Var> d = s.dw.args();  // (ci, co, kx, ky, kz, g)
    // Blocks of G/16 groups, 1 to 32: 16 tasks or more a call. (mb_dw960_7, kernel alone:
    // blocks of 32 groups 0.096-0.116 ms, of 8 0.107; in a JIT prototype 16 and 120 lost.)
    const Expr block = clamp(s.g_extent / 16, 1, s.tuned.get("block", 32));
    std::vector<Expr> filters = {s.square_2d(3), s.square_2d(5), Internal::const_true()};
    for (const Expr &filter : filters) {
        Stage st = s.dw.specialize(filter);
        st.split(d[5], g_o, g_i, block, TailStrategy::GuardWithIf).reorder(d[0], d[1], d[2], d[3], d[4], g_i, g_o).parallel(g_o);
    }
    s.sum.compute_at(s.dw, g_i);
    s.sum.update().atomic().vectorize(s.rl);
    s.lanes.compute_at(s.dw, g_i).vectorize(s.l);
    Stage lu = s.lanes.update();
    lu.reorder(s.l, s.kx, s.ky, s.rv).vectorize(s.l);
    s.part.compute_at(s.lanes, s.rv).vectorize(s.l);
    Stage pu = s.part.update();
    for (int taps : {3, 5}) {
        s.lanes.specialize(s.square_2d(taps)).unroll(s.kx).unroll(s.ky);
        lu.specialize(s.square_2d(taps)).unroll(s.kx).unroll(s.ky);
        s.part.specialize(s.square_2d(taps)).unroll(s.kx).unroll(s.ky);
        pu.specialize(s.square_2d(taps)).reorder(s.l, s.kx, s.ky, s.rn).vectorize(s.l).unroll(s.kx).unroll(s.ky);
    }
    // Other filters: a tap at a time, its sum over the images in a register.
    pu.reorder(s.l, s.rn, s.kx, s.ky).vectorize(s.l);
    // The first and last groups: the same sums, read through their zero boundary.
    s.edge_sum.compute_root();
    s.edge_sum.update().atomic().vectorize(s.rl);
    s.edge_lanes.compute_at(s.edge_sum, s.e).vectorize(s.l);
    s.edge_lanes.update().reorder(s.l, s.kx, s.ky, s.rv).vectorize(s.l);
    s.edge_part.compute_at(s.edge_lanes, s.rv).vectorize(s.l);
    s.edge_part.update().reorder(s.l, s.rn, s.kx, s.ky).vectorize(s.l);
    s.mask.compute_root().vectorize(s.l);
}

}  // namespace convgrad::gen
