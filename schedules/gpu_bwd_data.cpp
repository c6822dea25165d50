// GPU schedule of the data gradient (CUDA and OpenCL), over the same algorithm as the CPU.
//
// One thread per dx element, its reduction over output channels and taps in a register;
// threads adjacent in the channel dim (contiguous in NXC) read the same dy value (a
// broadcast) and write neighbouring dx values (coalesced). Every other stage (the padded
// dy, the filter, the dtype conversions) is inlined into that loop: nothing is staged in
// global memory, so one launch does the whole gradient.
// The x-phase variants (x_phases = 2) are CPU-only: a GPU thread has no tile whose pixels
// could share taps, and the predicate already skips the structural zeros.
#include "../generators/bwd_data.h"
#include "gpu_common.h"

namespace convgrad::gen {

void schedule_bwd_data_gpu(BwdDataStages &s, const Target &target, Layout layout) {
    (void)target;
    (void)layout;
    if (s.phased) throw std::invalid_argument("convgrad: the x-phase data-gradient variant is CPU-only");
    const Var thread = gpu_one_thread_per_point(s.dx, {s.c, s.x, s.y, s.z, s.g, s.n}, s.tuned.get("block", kGpuBlock));
    gpu_per_thread(s.acc, s.dx, thread);
}

}  // namespace convgrad::gen
