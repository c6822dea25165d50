// Everything that touches the Halide runtime: the error handler (so a pipeline error is a
// Status, never abort()), halide_buffer_t construction, and which multitarget path ran.
#pragma once

#include <functional>
#include <string>

#include "canonical_view.h"
#include "kernel_registry.h"

namespace convgrad {

// Runs an AOT kernel on canonical views. Errors come back with Halide's message.
Status run_kernel(const KernelEntry &k, const ConvProblem &p, const CanonicalView &a, const CanonicalView &b,
                  const CanonicalView &result);

// The exact problem of a call as a fixed-problem description for the JIT (FixedProblem in
// generators/generator_common.h): the kernel parameters and every buffer dimension exactly
// as run_kernel passes them.
std::string fixed_problem_text(const KernelEntry &k, const ConvProblem &p, const CanonicalView &a,
                               const CanonicalView &b, const CanonicalView &result);

// Installs convgrad's hooks (error handler, scratch allocator, thread pool) in the Halide
// runtime of a dlopen()ed JIT kernel, which carries its own; false if it lacks a setter.
bool install_hooks_in(void *dl_handle);

// Runs f with a fresh per-call Halide user_context: a non-zero return becomes an internal
// error naming `what`, with the messages Halide reported during the call.
Status halide_call(const std::string &what, const std::function<int(void *user_context)> &f);

// The multitarget path Halide selected on the last kernel call ("avx512_skylake", "avx2",
// "sse41", "baseline"), "" before any call.
std::string selected_isa_path();

// The x86 paths the AOT kernels hold, best first, comma-separated: the main build's
// (runtime/CMakeLists.txt passes CONVGRAD_X86_PATHS: SSE4.1 the fallback, CPUs without it
// refused). A library `convgrad aot` emits is built for its own target(s), which may reach
// down to the featureless baseline: every path.
#ifndef CONVGRAD_X86_PATHS
#define CONVGRAD_X86_PATHS "avx512_skylake,avx2,sse41,baseline"
#endif
bool x86_path_built(const std::string &path);

// The x86 multitarget paths, best first; the last, below SSE4.1, is not one a user may cap to.
inline constexpr const char *kX86PathNames[] = {"avx512_skylake", "avx2", "sse41", "baseline"};
inline constexpr int kX86PathCount = 3;  // the paths CONVGRAD_MAX_CPU_ISA may name

// CONVGRAD_MAX_CPU_ISA's index in kX86PathNames: 0 when unset, -1 for a name not in it
// (cpu_info.cpp); every call then fails with isa_cap_status's message.
int max_isa_index();
Status isa_cap_status();

// Whether this CPU's path (expected_isa_path: CPUID, CONVGRAD_MAX_CPU_ISA and the paths
// built) is AVX2 or better, where the refinements built without an SSE4.1 body run
// (KernelEntry::from_avx2). Always true off x86. Read once: CPUID traps in VMs.
bool cpu_takes_avx2();

}  // namespace convgrad
