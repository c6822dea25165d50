// CPU schedule of the filter gradient's pixel-vector variant (ncg_px): depthwise layers in
// channels-first layouts (NCHW: x contiguous, one channel per group), rows of at least one
// vector (the registry's rule).
//
// Each group is a small image of its own, so vectors run along x over output positions:
// per vector of positions, one contiguous load of dy and, per tap, one load of x (strided by
// the stride along x) and one FMA into that tap's vector of partial sums. The lanes are an
// rfactor of the reduction over x, summed once per group at the end. A tile is one group,
// every tap, over every image: threads own groups. Each image's plane of x is staged with its
// zero border in cache first, so the loads need no boundary test.
// The channel-vector ncg kernel reads transposed copies of x and dy: two extra passes over
// memory for a layer that is memory bound (mb_dw32_112: 4.1 ms against 0.9 ms in NHWC).
#include "cpu_staging.h"
#include "cpu_taps.h"

namespace convgrad::gen {

void schedule_bwd_weights_cpu_pixels(BwdWeightsStages &s, const Target &target) {
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    const RVar ox = s.r[0], oy = s.r[1], oz = s.r[2], n = s.r[3];
    RVar oxo("oxo"), oxi("oxi");
    Var lane("lane");
    // The reduction's x extent is a whole number of vectors (the generator rounds it up), so
    // the split's guard folds away: no masked last vector.
    Func part = s.acc.update().split(ox, oxo, oxi, vec, TailStrategy::GuardWithIf).rfactor(oxi, lane);
    // The partial sums are stored by a pure copy of `part` whose loops hold the tiles, so the
    // tile (part, per group) has a constant size: registers (see the NXG schedule).
    Func sums = part.in(s.acc);
    // Lanes innermost in storage, or every vector would be a gather.
    const auto lanes_innermost = [&](Func f) { f.reorder_storage(lane, s.ci, s.co, s.kx, s.ky, s.kz, s.g); };
    lanes_innermost(sums);
    // A thread's task: a group, or with many groups a block of kGroups (one group took ~1 us
    // on 7x7 planes, under the thread pool's overhead per task: mb_dw960_7 1.13x, kernel
    // alone). Few groups keep one a task, so two threads share them evenly.
    constexpr int kGroups = 8;
    Var g_o("g_o"), g_i("g_i");
    sums.compute_root().vectorize(lane);
    for (int groups : {kGroups, 1}) {
        Stage st = groups > 1 ? Stage(sums.specialize(s.g_extent >= 16 * groups)) : Stage(sums);
        st.split(s.g, g_o, g_i, groups, TailStrategy::GuardWithIf)
            .reorder(lane, s.ci, s.co, s.kx, s.ky, s.kz, g_i, g_o)
            .parallel(g_o);
        for (int taps : {3, 5}) st.specialize(s.square_2d(taps));
    }

    // The tile: one group's taps x one vector of lanes, over every position of every image.
    lanes_innermost(part);
    part.compute_at(sums, g_i).vectorize(lane);
    Stage pu = part.update();
    // Square 3x3 and 5x5 filters: every tap in its own register (cpu_taps.h). Other shapes:
    // one chain per tap, re-reading the planes from cache once per tap.
    for (Stage st : taps_in_registers(s, pu, lane, {oxo, oy, oz}, {n})) {
        st.vectorize(lane);
        // Strides 1 and 2 along x: loads of x with a constant stride (dense, or two loads
        // and a shuffle) instead of a gather.
        st.specialize(s.stride_x == 1);
        st.specialize(s.stride_x == 2);
    }
    pu.reorder(lane, oxo, oy, oz, s.kx, s.ky, s.kz, n).vectorize(lane);
    if (s.flat_planes) {
        // ncg_fp: each image's planes of x and dy copied flat with the zeros around them,
        // the column tests once per call.
        for (Func f : {s.x_in, s.dy_in}) stage_flat_plane(f, LoopLevel(sums, g_i), LoopLevel(part, n), vec);
        compute_column_test(s.col_ok, vec);
    } else {
        // Each image's planes of x (zero border included) and dy (zeros past its width, for
        // the whole vectors), one group's, staged before its positions: loads with no lane tests.
        for (Func f : {s.x_in, s.dy_in}) stage_rows_over_zeros(f, LoopLevel(part, n), vec);
    }

    // The lanes summed per (group, tap), in parallel over blocks of groups: small next to the
    // reduction, but done serially it was 5-10 % of the call on 7x7-28x28 planes.
    s.acc.compute_root();
    s.acc.update().parallel(s.g, 32);
}

}  // namespace convgrad::gen
