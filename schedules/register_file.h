// The vector register file of an ISA path: it sizes the CPU schedules' register tiles
// (generators/generator_common.h: vector_registers) and the tuner's grids of tile shapes
// (tools/tune_command.cpp). Halide-free, so that both include it.
#pragma once

namespace convgrad {

// AVX-512: 32 zmm; ARM64 NEON: 32 (128-bit); AVX2, SSE4.1 and the x86 baseline: 16.
constexpr int vector_registers_of(bool avx512, bool arm64) { return avx512 || arm64 ? 32 : 16; }

}  // namespace convgrad
