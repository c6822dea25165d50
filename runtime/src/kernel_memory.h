// The CPU kernels' scratch memory (halide_malloc / halide_free, installed with the error
// handler in halide_bridge.cpp).
#pragma once

#include <cstddef>
#include <memory>

namespace convgrad {

// Kernels allocate their staged blocks per task: a few KB each, once per task (960 pairs a
// call for NCHW mb_dw960_7's data gradient). glibc serves blocks of that size from its
// bins, not its per-thread cache (which stops at 1 KB), and the pairs took a fifth of such
// a call. These keep each thread's freed blocks of up to kCachedBlockMax bytes, by
// power-of-two size class, and hand them out again; and its last few larger ones (copies of
// whole activations, once per call), which glibc otherwise returned to the system between
// calls, so that each call page-faulted them in again (kernel_memory.cpp).
constexpr std::size_t kCachedBlockMax = std::size_t(1) << 18;
void *kernel_malloc(void *user_context, std::size_t bytes);
void kernel_free(void *user_context, void *ptr);

// A block of kernel_malloc's the runtime holds across a call (a dilation phase's filter
// gradient, a 16-bit call's float32 copies: execute.cpp); null where memory ran out.
struct KernelBlockFree {
    void operator()(void *ptr) const { kernel_free(nullptr, ptr); }
};
using KernelBlock = std::unique_ptr<void, KernelBlockFree>;
inline KernelBlock kernel_block(std::size_t bytes) { return KernelBlock(kernel_malloc(nullptr, bytes)); }

}  // namespace convgrad
