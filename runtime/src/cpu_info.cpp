// Host CPU features (CPUID, as Halide's runtime reads them) and the x86 multitarget path they
// should select. `convgrad info` prints both beside the path a kernel call actually took.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "convgrad/convgrad.h"
#include "halide_bridge.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace convgrad {
namespace {

struct Feature {
    const char *name;
    int leaf, reg, bit;  // reg: 1 = ebx, 2 = ecx
};

constexpr Feature kFeatures[] = {
    {"sse41", 1, 2, 19},    {"fma", 1, 2, 12},       {"avx", 1, 2, 28},      {"f16c", 1, 2, 29},
    {"avx2", 7, 1, 5},      {"avx512f", 7, 1, 16},   {"avx512dq", 7, 1, 17}, {"avx512cd", 7, 1, 28},
    {"avx512bw", 7, 1, 30}, {"avx512vl", 7, 1, 31},
};

// Unused on AArch64, whose path does not depend on CPU features.
[[maybe_unused]] bool has(const std::vector<std::string> &features, std::initializer_list<const char *> names) {
    for (const char *n : names) {
        bool found = false;
        for (const auto &f : features) found = found || f == n;
        if (!found) return false;
    }
    return true;
}

}  // namespace

// CONVGRAD_MAX_CPU_ISA (as oneDNN's ONEDNN_MAX_CPU_ISA): the best x86 path kernels may take,
// for a user comparing paths on one machine and for the tests, which run each path this CPU
// can run natively instead of under qemu (tests/isa_path_run.sh: emulated AVX2 ran 5x slower
// than emulated SSE4.1 on an Intel host, 15+ min for the binary). Read once.
int max_isa_index() {
    static const int index = [] {
        const char *env = std::getenv("CONVGRAD_MAX_CPU_ISA");
        if (env == nullptr || *env == '\0') return 0;
        for (int i = 0; i < kX86PathCount; i++) {
            if (std::string(env) == kX86PathNames[i]) return i;
        }
        return -1;
    }();
    return index;
}

Status isa_cap_status() {
    if (max_isa_index() >= 0) return Status::ok();
    return Status::invalid(std::string("CONVGRAD_MAX_CPU_ISA=") + std::getenv("CONVGRAD_MAX_CPU_ISA") +
                           ": expected avx512_skylake, avx2 or sse41");
}

std::vector<std::string> host_cpu_features() {
    std::vector<std::string> out;
#if defined(__x86_64__)
    for (const Feature &f : kFeatures) {
        unsigned regs[4] = {0, 0, 0, 0};
        if (!__get_cpuid_count(f.leaf, 0, &regs[0], &regs[1], &regs[2], &regs[3])) continue;
        if ((regs[f.reg] >> f.bit) & 1) out.push_back(f.name);
    }
#endif
    return out;
}

// The best of the paths the kernels were built with (halide_bridge.h: x86_path_built) that
// this CPU supports, no better than CONVGRAD_MAX_CPU_ISA; "baseline" for a CPU without
// SSE4.1, whose AOT kernels refuse to run unless they hold that path (halide_bridge.cpp) and
// whose JIT kernels are plain x86-64.
std::string expected_isa_path() {
#if defined(__aarch64__)
    return "arm64";  // one target (plain NEON), no multitarget choice
#else
    const auto f = host_cpu_features();
    const bool sse41 = has(f, {"sse41"});
    const bool avx2 = sse41 && has(f, {"avx", "avx2", "fma", "f16c"});
    const bool avx512 = avx2 && has(f, {"avx512f", "avx512cd", "avx512vl", "avx512bw", "avx512dq"});
    const bool supported[kX86PathCount] = {avx512, avx2, sse41};
    for (int i = std::max(0, max_isa_index()); i < kX86PathCount; i++) {
        if (supported[i] && x86_path_built(kX86PathNames[i])) return kX86PathNames[i];
    }
    return "baseline";
#endif
}

bool cpu_takes_avx2() {
    static const bool yes = [] {
        const std::string path = expected_isa_path();
        return path == "arm64" || path == "avx512_skylake" || path == "avx2";
    }();
    return yes;
}

std::string last_isa_path() { return selected_isa_path(); }

std::string host_cpu_vendor() {
#if defined(__x86_64__)
    static const std::string vendor = [] {
        unsigned regs[4] = {0, 0, 0, 0};  // eax, ebx, ecx, edx
        if (!__get_cpuid(0, &regs[0], &regs[1], &regs[2], &regs[3])) return std::string();
        char name[13] = {};
        std::memcpy(name, &regs[1], 4);  // the vendor string: ebx, edx, ecx
        std::memcpy(name + 4, &regs[3], 4);
        std::memcpy(name + 8, &regs[2], 4);
        return std::string(name);
    }();
    return vendor;
#else
    return "";
#endif
}

int host_cpu_family() {
#if defined(__x86_64__)
    static const int family = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
        const int base = (eax >> 8) & 0xf;  // the extended family counts only past 15
        return base == 0xf ? base + int((eax >> 20) & 0xff) : base;
    }();
    return family;
#else
    return 0;
#endif
}

}  // namespace convgrad
