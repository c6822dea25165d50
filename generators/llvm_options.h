// LLVM options per kernel. Halide 14 hands HL_LLVM_ARGS to LLVM's option parser once per
// process, at its first code generation (CodeGen_LLVM::initialize_llvm), which comes after the
// generator's generate(); every kernel is a generator process of its own (the AOT build,
// `convgrad aot`, the JIT and the tuner all run the generator executable), so generate() can
// choose the options per kernel by setting that variable first.
//
// Why: LLVM takes most of a kernel's generation (Halide's lowering the rest), and generation
// is most of CI's time. Its O3 pipeline spends ~60 % of a kernel's time in the IR
// optimisations (perf on the generator), where non-trivial loop unswitching copies loops on
// conditions Halide left inside them; the copies then go through instruction selection and
// register allocation too. Without it (the O2 pipeline's choice) AVX-512 objects are up to
// 30 % smaller; the three x86 paths of ten float64/16-bit/int32 kernels generate in 0.83x
// the time, six ARM64 kernels in 0.90x; results are bit-identical, but dense filter gradients
// ran 1-4 % slower kernel alone (float32 nxc_xp and nxc, float64 nxc; bench/RESULTS.md,
// fifty-fifth session). So float32 x86 kernels, the ones the benchmark measures, keep full
// O3; float64, the 16-bit floats and int32 (for exactness and reach, not tuned for speed),
// and ARM64's kernels (built and tested under qemu, never timed or tuned), take:
// - -unswitch-threshold=0: no non-trivial unswitching (trivial unswitching stays);
// - -disable-x86-domain-reassignment: AVX-512's pass that moves mask logic into k registers
//   (14 % of the AVX-512 code generator's time; nxc_px's assembly identical without it).
// The dtypes other than float32, on every CPU, also take
// - -vectorize-slp=false: no SLP vectorizer (Halide vectorizes explicitly; SLP packs the
//   scalar code left, mostly index arithmetic): their six kernels' three x86 paths generated
//   in 0.93x the time, results bit-identical, kernel alone 0.95-1.04x (float64 nxc_cs, ncx_cs
//   and nxc 0.98-1.01x, int32 nxc filter 0.95x and ncx data 1.04x). float32 keeps it, ARM64's
//   too: its Winograd data gradient ran 0.92x without it on the AVX-512 path (bench/RESULTS.md,
//   fifty-sixth session).
// - and on x86, the float32 variants that ran as fast without it (`slp_pays` false: the
//   small-group ones, nxc_sg: kernel alone, AVX-512, rx_g32_28's data gradient 1.126x in
//   two runs of 7 rounds and its filter gradient 1.09x in the sixty-first session, then
//   0.965x and 0.989x, and 1.046x, in the sixty-second: bench/RESULTS.md), which then
//   compile in less time. Across the suite's other float32 kernels SLP off measured
//   0.99-1.00x in geomean, Winograd's 0.75-0.89x, so it stays on for them.
// GPU kernels are left alone (their device code is small). A user's own HL_LLVM_ARGS (e.g.
// -time-passes) wins: it is left as it is.
#pragma once

#include <cstdlib>
#include <string>

#include "Halide.h"

namespace convgrad::gen {

inline void choose_llvm_options(const Halide::Target &t, const Halide::Type &storage, bool slp_pays = true) {
    if (t.has_gpu_feature()) return;
    const char *user = std::getenv("HL_LLVM_ARGS");
    if (user != nullptr && *user != '\0') return;
    const bool float32 = storage == Halide::Float(32), x86 = t.arch == Halide::Target::X86;
    std::string args;
    auto add = [&args](const char *option) { args += (args.empty() ? "" : " ") + std::string(option); };
    if (!(x86 && float32)) {
        add("-unswitch-threshold=0");
        add("-disable-x86-domain-reassignment");
    }
    if (!float32 || (x86 && !slp_pays)) add("-vectorize-slp=false");
    if (!args.empty()) setenv("HL_LLVM_ARGS", args.c_str(), /*overwrite=*/1);
}

}  // namespace convgrad::gen
