// GPU schedule of the data gradient (CUDA and OpenCL), over the same algorithm as the CPU.
//
// One thread per dx element. Its reduction over output channels and taps runs in launches of
// its own (gpu_common.h), into accumulators in global memory; threads adjacent in the
// channel dim (contiguous in NXC) read the same dy value (a broadcast) and write neighbouring
// values (coalesced). A last launch converts them into dx. Every other stage (the padded dy,
// the filter, the dtype conversions) is inlined into those loops.
// The x-phase variants (x_phases = 2) are CPU-only: a GPU thread has no tile whose pixels
// could share taps, and the predicate already skips the structural zeros.
#include "../generators/bwd_data.h"
#include "gpu_common.h"

namespace convgrad::gen {

void schedule_bwd_data_gpu(BwdDataStages &s, const Target &target, Layout layout) {
    (void)target;
    (void)layout;
    if (s.phased) throw std::invalid_argument("convgrad: the x-phase data-gradient variant is CPU-only");
    const std::vector<VarOrRVar> dims = {s.c, s.x, s.y, s.z, s.g, s.n};
    const int block = s.tuned.get("block", kGpuBlock);
    gpu_reduction_in_own_launches(s.acc, dims, block);
    gpu_one_thread_per_point(s.dx, dims, block);
}

}  // namespace convgrad::gen
