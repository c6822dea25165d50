// The seam between the AOT library and the optional JIT backend (runtime/jit/, library
// convgrad_jit): the core never compiles anything; a provider, once installed, turns a
// registry entry plus the exact problem into a specialised kernel with the same signature.
#pragma once

#include <string>

#include "kernel_registry.h"

namespace convgrad {

// How far a lookup may go: compile (Backend::kJit), take a kernel already compiled, from
// memory or the disk cache (kAuto), or only look in memory without counting (select_kernel).
enum class JitLookup { kCompile, kCompiled, kPeek };

class JitProvider {
public:
    virtual ~JitProvider() = default;
    // A kernel computing what `base` computes, specialised to the problem `fixed` describes
    // (generators/generator_common.h: FixedProblem).
    virtual Result<KernelFn> kernel(const KernelEntry &base, const std::string &fixed, JitLookup how) = 0;
};

void set_jit_provider(JitProvider *provider);  // nullptr: none (Backend::kJit is then unsupported)
JitProvider *jit_provider();

}  // namespace convgrad
