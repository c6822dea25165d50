// GPU schedule of the data gradient (CUDA and OpenCL), over the same algorithm as the CPU.
//
// Each thread owns one (channel, pixel, row) of dx and loops over the depth, group and image
// dims itself, its reduction over output channels and taps in a register. A block is 32
// channels x 4 pixels (threads adjacent in the channel dim read the same dy value, a
// broadcast, and write neighbouring dx values, coalesced in NXC); the grid spans channel
// blocks, pixel blocks and rows. Depthwise layers (one channel per group) put the groups
// where the channels were; layers with few channels per group get their own grid (below). The grid is not fused: through a fused loop's div/mod, bounds
// inference widens the per-thread accumulator's region and indexes it out of bounds
// (gpu_common.h), and serial loops inside a thread keep every point exact. Every other
// stage (the padded dy, the filter, the dtype conversions) is inlined into that loop.
// The x-phase variants (x_phases = 2) are CPU-only: a GPU thread has no tile whose pixels
// could share taps, and the predicate already skips the structural zeros.
#include "../generators/bwd_data.h"
#include "gpu_common.h"

namespace convgrad::gen {

void schedule_bwd_data_gpu(BwdDataStages &s, const Target &target, Layout layout) {
    (void)target;
    (void)layout;
    if (s.phased) throw std::invalid_argument("convgrad: the x-phase data-gradient variant is CPU-only");
    Var v_o("v_o"), v_i("v_i"), x_o("x_o"), x_i("x_i");
    // A block of `block` threads: `channels` channels by block / channels pixels.
    const int block = s.tuned.get("block", kGpuBlock);
    auto grid = [&](Stage st, const Var &vectorish, const Var &serial, int channels) {
        st.reorder(s.z, serial, s.n, vectorish, s.x, s.y)
            .gpu_tile(vectorish, s.x, v_o, x_o, v_i, x_i, channels, std::max(1, block / channels),
                      TailStrategy::GuardWithIf)
            .gpu_blocks(s.y);
    };
    grid(s.dx.specialize(s.c_extent == 1), s.g, s.c, 32);
    // Few channels (an RGB stem, ResNeXt's groups of 4): with the grid above most of a
    // block's threads were idle and the groups ran serially in each thread (the stem's data
    // gradient 2.8 -> 5.7 ms on the H100, rx_g32_28's 0.33 -> 1.5). Here a thread loops over
    // the channels; the grid spans pixel blocks, rows and groups.
    s.dx.specialize(s.c_extent < 16)
        .reorder(s.z, s.c, s.n, s.x, s.y, s.g)
        .gpu_tile(s.x, x_o, x_i, 32, TailStrategy::GuardWithIf)
        .gpu_blocks(s.y, s.g);
    grid(s.dx, s.c, s.g, 32);
    // One point per innermost (depth) iteration: a register, its extents exact.
    s.acc.compute_at(s.dx, s.z).store_in(MemoryType::Register);
    for (const Var &v : s.acc.args()) s.acc.bound_extent(v, 1);
}

}  // namespace convgrad::gen
