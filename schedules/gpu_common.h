// Pieces shared by the GPU schedules of both gradients.
#pragma once

#include <vector>

#include "../generators/generator_common.h"

namespace convgrad::gen {

// Threads per block of the flat GPU schedules: a multiple of every vendor's SIMD width
// (NVIDIA warps of 32, AMD wavefronts of 64), small enough for any OpenCL device's limit.
constexpr int kGpuBlock = 128;

// One GPU thread per point of `st`'s loop nest over `dims` (innermost first): the dims are
// fused into one loop and split into blocks of kGpuBlock threads, the tail guarded, so any
// extent works. Fusing (instead of a 2-D/3-D grid) keeps every dim of the 6-D canonical
// tensors inside the kernel: loops outside the grid would run on the host, one launch each.
// The innermost dim is the fastest-varying across a warp, so it should be the contiguous one.
// Returns the thread var: the innermost loop, where per-point stages are computed.
inline Var gpu_one_thread_per_point(Stage st, const std::vector<VarOrRVar> &dims, int block = kGpuBlock) {
    VarOrRVar fused = dims[0];
    for (size_t i = 1; i < dims.size(); i++) {
        Var next("flat" + std::to_string(i));
        st.fuse(fused, dims[i], next);
        fused = next;
    }
    Var block_var("block"), thread("thread");
    st.gpu_tile(fused.var, block_var, thread, block, TailStrategy::GuardWithIf);
    return thread;
}

// Computes the reduction `acc` per thread of its consumer, in registers. Bounds inference
// cannot prove that the fused loop's div/mod pins each dim to one point (the extents might
// be negative, as far as it knows), so without a storage bound it sizes `acc` at run time
// and lifts it into a global-memory buffer per launch. At run time the region is one point,
// so an extent bound of 1 is exact.
inline void gpu_per_thread(Func acc, Func consumer, const Var &thread) {
    acc.compute_at(consumer, thread).store_in(MemoryType::Register);
    for (const Var &v : acc.args()) acc.bound_extent(v, 1);
}

}  // namespace convgrad::gen
