// GPU schedule of the filter gradient (CUDA and OpenCL), over the same algorithm as the CPU.
//
// The filter gradient is a small output (CI x CO x taps x G values) with a long reduction
// (N x OD x OH x OW), e.g. 288 outputs over 100 K terms for a depthwise 3x3 layer: one
// thread per output would leave almost the whole GPU idle. rfactor splits the reduction
// into partial sums over (image n, chunk of kRowsPerPart output rows), one thread per
// (output, part), stored in global memory; a second kernel adds each output's parts in a
// fixed order. No atomics: results are the same bits on every run.
#include "../generators/bwd_weights.h"
#include "gpu_common.h"

namespace convgrad::gen {

namespace {
// Output rows one partial sum covers: a thread then reduces kRowsPerPart x OW x OD terms
// (rn50_3x3_56: 448 FMAs; the parts are 8 x 7 = 56 per output).
constexpr int kRowsPerPart = 8;
}  // namespace

void schedule_bwd_weights_gpu(BwdWeightsStages &s, const Target &target, Layout layout) {
    (void)target;
    (void)layout;
    const RVar oy = s.r[1], n = s.r[3];
    RVar oy_part("oy_part"), oy_row("oy_row");
    Var part_y("part_y"), part_n("part_n");
    // RVar splits guard their tail: rows past OH are not reduced twice.
    s.acc.update().split(oy, oy_part, oy_row, s.tuned.get("rows_per_part", kRowsPerPart));
    Func partial = s.acc.update().rfactor({{oy_part, part_y}, {n, part_n}});
    const int block = s.tuned.get("block", kGpuBlock);
    gpu_reduction_in_own_launches(partial, {s.ci, s.co, s.kx, s.ky, s.kz, s.g, part_y, part_n}, block);

    // The final sums: one thread per filter element adds its parts (order fixed by the loop),
    // then one per element converts them into dw.
    const std::vector<VarOrRVar> filter = {s.ci, s.co, s.kx, s.ky, s.kz, s.g};
    gpu_reduction_in_own_launches(s.acc, filter, block);
    gpu_one_thread_per_point(s.dw, filter, block);
}

}  // namespace convgrad::gen
