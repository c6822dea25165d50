// CPU schedule of the data gradient.
//
// NXC: vectorise over the channel c (contiguous); each thread owns whole rows of (y, z, g, n);
//      the filter is packed once with c innermost so the inner loop reads it contiguously
//      whatever the user's filter layout (HWIO has c strided by C_out).
// NCX: vectorise along x (contiguous); accumulate one row of x per channel.
// Any: the NXC structure without stride assumptions (gathers): the always-correct fallback.
//
// A unit-stride specialisation removes the division and modulus of the tap→output mapping.
// This is the foundation schedule; the performance work (phase split for stride > 1,
// register-blocked microkernels) lives in later variants of the registry.
#include "../generators/bwd_data.h"

namespace convgrad::gen {

void schedule_bwd_data_cpu(BwdDataStages &s, const Target &target, Layout layout) {
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    const RVar co = s.r[0], kx = s.r[1], ky = s.r[2], kz = s.r[3];
    Var rows("rows");

    if (layout == Layout::NCX) {
        s.dx.reorder(s.x, s.c, s.y, s.z, s.g, s.n)
            .fuse(s.y, s.z, rows).fuse(rows, s.g, rows).fuse(rows, s.n, rows)
            .parallel(rows);
        s.dx.specialize(s.x_extent >= vec).vectorize(s.x, vec);
        s.acc.compute_at(s.dx, s.c).vectorize(s.x, vec, TailStrategy::GuardWithIf);
        s.acc.update().reorder(s.x, co, kx, ky, kz).vectorize(s.x, vec, TailStrategy::GuardWithIf);
    } else {
        s.dx.fuse(s.y, s.z, rows).fuse(rows, s.g, rows).fuse(rows, s.n, rows).parallel(rows);
        s.dx.specialize(s.c_extent >= vec).vectorize(s.c, vec);
        s.acc.compute_at(s.dx, s.x).vectorize(s.c, vec, TailStrategy::GuardWithIf);
        s.acc.update().reorder(s.c, co, kx, ky, kz).vectorize(s.c, vec, TailStrategy::GuardWithIf);
        s.w_local.compute_root();
    }
    // Scheduled first so the specialisation inherits the schedule above.
    s.acc.update().specialize(s.unit_stride);
}

}  // namespace convgrad::gen
