// Everything that touches the Halide runtime: the error handler (so a pipeline error is a
// Status, never abort()), halide_buffer_t construction, and which multitarget path ran.
#pragma once

#include <string>

#include "canonical_view.h"
#include "kernel_registry.h"

namespace convgrad {

// Runs an AOT kernel on canonical views. Errors come back with Halide's message.
Status run_kernel(const KernelEntry &k, const ConvProblem &p, const CanonicalView &a, const CanonicalView &b,
                  const CanonicalView &result);

// The multitarget path Halide selected on the last kernel call ("avx512_skylake", "avx2",
// "sse41", "baseline"), "" before any call.
std::string selected_isa_path();

}  // namespace convgrad
