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

// The reduction `acc` in launches of its own: one thread per point sets it, then one thread
// per point runs that point's whole reduction (in a fixed order: deterministic), in global
// memory that its consumer then reads. (Computed per thread of the consumer, in a register,
// its one-element storage was indexed from a region that bounds inference widens through the
// fused loop's div/mod, from the buffer's min to the thread's point: out of bounds on most
// threads. LLVM folded that into a register for most dtypes; on CUDA, bfloat16's bit casts
// kept it in local memory and read garbage.) `dims`: acc's pure vars, innermost first.
inline void gpu_reduction_in_own_launches(Func acc, const std::vector<VarOrRVar> &dims, int block) {
    acc.compute_root();
    gpu_one_thread_per_point(acc, dims, block);
    gpu_one_thread_per_point(acc.update(), dims, block);
}

}  // namespace convgrad::gen
