// CPU schedule of the filter gradient.
//
// NXC / Any: vectorise over the output channel co (contiguous in dy); threads split the
//   (ci, taps, g) space, each reducing over the whole batch and output plane in a fixed order
//   (deterministic: no atomics, no thread-count-dependent sums).
// NCX: the reduction runs along x, which is contiguous in both x and dy: rfactor the inner
//   part of the x reduction into vector lanes, then sum the lanes.
#include "../generators/bwd_weights.h"

namespace convgrad::gen {

void schedule_bwd_weights_cpu(BwdWeightsStages &s, const Target &target, Layout layout) {
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    const RVar ox = s.r[0], oy = s.r[1], oz = s.r[2], n = s.r[3];
    Var work("work");

    s.dw.reorder(s.co, s.ci, s.kx, s.ky, s.kz, s.g)
        .fuse(s.ci, s.kx, work).fuse(work, s.ky, work).fuse(work, s.kz, work).fuse(work, s.g, work)
        .parallel(work);
    s.acc.compute_at(s.dw, work);

    if (layout == Layout::NCX) {
        RVar oxo("oxo"), oxi("oxi");
        Var lane("lane");
        Func lanes = s.acc.update().split(ox, oxo, oxi, vec, TailStrategy::GuardWithIf)
                         .rfactor(oxi, lane);
        lanes.compute_at(s.acc, s.co).vectorize(lane);
        lanes.update().reorder(lane, oxo, oy, oz, n).vectorize(lane);
        lanes.update().specialize(s.unit_stride);
    } else {
        s.dw.specialize(s.co_extent >= vec).vectorize(s.co, vec);
        s.acc.vectorize(s.co, vec, TailStrategy::GuardWithIf);
        s.acc.update().reorder(s.co, ox, oy, oz, n).vectorize(s.co, vec, TailStrategy::GuardWithIf);
        s.acc.update().specialize(s.unit_stride);
    }
}

}  // namespace convgrad::gen
