// LLVM bitcode for what Halide 14 cannot emit on x86 (cmake/EmbedBitcode.cmake assembles it):
// streaming stores and sfence (streaming_stores.h), and a prefetch into L2
// (next_tile_prefetch.h, next_image_prefetch.h). Lowering passes call its functions as
// Call::Extern; Halide links the bitcode into the kernel (ExternalCode) and LLVM inlines them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "Halide.h"

namespace convgrad::gen {

extern const std::vector<uint8_t> kX86Bitcode;  // generated: cmake/EmbedBitcode.cmake

// Hands Halide the bitcode for the pipeline being built (`externs`: the generator's
// get_externs_map()); once, whichever passes use it.
inline void link_x86_bitcode(const Halide::Target &t, Halide::GeneratorContext::ExternsMap &externs) {
    const std::string name = "convgrad.x86_bitcode";
    if (externs.count(name) == 0) externs.insert({name, Halide::ExternalCode::bitcode_wrapper(t, kX86Bitcode, name)});
}

// A prefetch into L2 of `buffer`'s element at `index` (elements of `element_bytes`): the
// bitcode's convgrad_prefetch, as a statement for a lowering pass to insert.
inline Halide::Internal::Stmt x86_prefetch(const std::string &buffer, const Halide::Expr &index, int element_bytes) {
    using namespace Halide::Internal;
    return Evaluate::make(Call::make(Halide::Int(32), "convgrad_prefetch",
                                     {Variable::make(Halide::Handle(), buffer), Halide::cast<int64_t>(index) * element_bytes},
                                     Call::Extern));
}

}  // namespace convgrad::gen
