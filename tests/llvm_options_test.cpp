// The LLVM options each kernel compiles with (generators/llvm_options.h): float32 on x86
// keeps LLVM's full O3, but for the SLP vectorizer where a variant's tiles ran as fast
// without it; float64, 16-bit floats, int32 and every ARM64 kernel compile without
// non-trivial loop unswitching or AVX-512's domain reassignment, and all but float32 without
// the SLP vectorizer; GPU kernels and a user's own HL_LLVM_ARGS are left alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "Halide.h"
#include "llvm_options.h"

namespace convgrad::test {
namespace {

using Halide::Target;

const std::string kCheaper = "-unswitch-threshold=0 -disable-x86-domain-reassignment";
const std::string kCheaperNoSlp = kCheaper + " -vectorize-slp=false";

// HL_LLVM_ARGS after choosing for (target, dtype) from an unset variable ("" if still unset).
std::string chosen(const std::string &target, const Halide::Type &dtype, bool slp_pays = true) {
    unsetenv("HL_LLVM_ARGS");
    gen::choose_llvm_options(Target(target), dtype, slp_pays);
    const char *v = std::getenv("HL_LLVM_ARGS");
    return v == nullptr ? "" : v;
}

TEST(LlvmOptions, Float32OnX86KeepsFullOptimisation) {
    EXPECT_EQ(chosen("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41", Halide::Float(32)), "");
    EXPECT_EQ(chosen("x86-64-linux-sse41", Halide::Float(32)), "");
}

// The variants whose x86 float32 tiles ran as fast without SLP (nxc_sg) lose it alone; on
// ARM64 they keep it like every float32 kernel there.
TEST(LlvmOptions, SlpOffWhereItDoesNotPay) {
    EXPECT_EQ(chosen("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41", Halide::Float(32), false),
              "-vectorize-slp=false");
    EXPECT_EQ(chosen("x86-64-linux-sse41", Halide::Float(32), false), "-vectorize-slp=false");
    EXPECT_EQ(chosen("x86-64-linux-avx-avx2-f16c-fma-sse41", Halide::Float(64), false), kCheaperNoSlp);
    EXPECT_EQ(chosen("arm-64-linux", Halide::Float(32), false), kCheaper);
}

TEST(LlvmOptions, OtherDtypesAndArm64CompileCheaper) {
    const std::string x86 = "x86-64-linux-avx-avx2-f16c-fma-sse41";
    EXPECT_EQ(chosen(x86, Halide::Float(64)), kCheaperNoSlp);
    EXPECT_EQ(chosen(x86, Halide::Float(16)), kCheaperNoSlp);
    EXPECT_EQ(chosen(x86, Halide::BFloat(16)), kCheaperNoSlp);
    EXPECT_EQ(chosen(x86, Halide::Int(32)), kCheaperNoSlp);
    EXPECT_EQ(chosen("arm-64-linux", Halide::Float(64)), kCheaperNoSlp);
    EXPECT_EQ(chosen("arm-64-linux", Halide::Float(32)), kCheaper);  // SLP kept: see llvm_options.h
}

TEST(LlvmOptions, GpuKernelsAndTheUsersOwnArgsAreLeftAlone) {
    EXPECT_EQ(chosen("x86-64-linux-cuda-cuda_capability_80", Halide::Float(64)), "");
    EXPECT_EQ(chosen("x86-64-linux-opencl", Halide::Int(32)), "");
    setenv("HL_LLVM_ARGS", "-time-passes", 1);
    gen::choose_llvm_options(Target("x86-64-linux-sse41"), Halide::Float(64));
    EXPECT_STREQ(std::getenv("HL_LLVM_ARGS"), "-time-passes");
    unsetenv("HL_LLVM_ARGS");
}

}  // namespace
}  // namespace convgrad::test
