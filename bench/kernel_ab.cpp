// Same-process A/B of two builds of one kernel variant (scripts/kernel-ab.sh builds them):
// kern_a and kern_b on one fixed problem, given in the JIT's `fixed` format (a JIT cache
// entry holds it: `strings ~/.cache/convgrad/<key>.so | grep ' fixed '`). Checks that both
// give the same result, then times them interleaved (rounds of >= 0.3 s each, median per
// round, best round), so the VM's slow phases land on both. Kernel only: no registry, no
// views, no oneDNN.
//   kernel_ab FIXED IN0 IN1 OUT [ROUNDS [ONLY]]   e.g. kernel_ab "$fixed" dy w dx 5
// ONLY (0 or 1) times one of the two alone, for perf.
// KERNEL_AB_DTYPE (environment; scripts/kernel-ab.sh sets it from PARAMS' dtype): float32
// (default), float64 or int32, the buffers' element type.
// Scratch comes from the library's allocator (runtime/src/kernel_memory.cpp), parallel loops
// run on its thread pool (runtime/src/thread_pool.cpp).
// OFF_<name> (environment, e.g. OFF_dy=256): that buffer starts so many bytes past a page
// boundary (default 0): where buffers start relative to each other moves some kernels by 2x
// (lines of channels-last pixels 1 KB apart share few L2 sets).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "../generators/fixed_problem_text.h"
#include "../runtime/src/kernel_memory.h"
#include "../runtime/src/thread_pool.h"
#include "HalideBuffer.h"
#include "HalideRuntime.h"

extern "C" int kern_a(void *, int, int, int, int, int, int, int, int, int, halide_buffer_t *, halide_buffer_t *,
                      halide_buffer_t *);
extern "C" int kern_b(void *, int, int, int, int, int, int, int, int, int, halide_buffer_t *, halide_buffer_t *,
                      halide_buffer_t *);

namespace {

using Halide::Runtime::Buffer;
using Fixed = convgrad::gen::FixedValues;

// A buffer with the problem's extents and strides, filled with values in [-0.5, 0.5)
// (integers: [-8, 8)), starting OFF_<name> bytes past a page boundary.
template<typename T>
Buffer<T> make(const Fixed &f, const std::string &name) {
    const std::vector<int64_t> &e = f.at(name + ".extent"), &s = f.at(name + ".stride");
    std::vector<halide_dimension_t> dims;
    size_t span = 1;
    for (size_t i = 0; i < e.size(); i++) {
        dims.push_back({0, static_cast<int32_t>(e[i]), static_cast<int32_t>(s[i])});
        span += static_cast<size_t>(e[i] - 1) * s[i];
    }
    const char *off_env = std::getenv(("OFF_" + name).c_str());
    const size_t off = off_env ? std::strtoul(off_env, nullptr, 10) : 0;
    char *raw = static_cast<char *>(aligned_alloc(4096, (span * sizeof(T) + off + 4095) / 4096 * 4096));
    T *p = reinterpret_cast<T *>(raw + off);
    for (size_t i = 0; i < span; i++) {
        if constexpr (std::is_integral_v<T>) {
            p[i] = static_cast<T>((i * 2654435761u) % 16) - T(8);
        } else {
            p[i] = static_cast<T>((i * 2654435761u) % 1000) / T(1000) - T(0.5);
        }
    }
    return Buffer<T>(p, static_cast<int>(e.size()), dims.data());
}

template<typename T>
int run(char **argv, const Fixed &f, int rounds, int only) {
    Buffer<T> in0 = make<T>(f, argv[2]), in1 = make<T>(f, argv[3]);
    Buffer<T> out[2] = {make<T>(f, argv[4]), make<T>(f, argv[4])};
    std::vector<int> sdp;  // stride, dilation, pad: the kernels' scalar arguments
    for (const char *key : {"stride", "dilation", "pad"}) {
        for (int64_t v : f.at(key)) sdp.push_back(static_cast<int>(v));
    }
    const auto call = [&](int k) {
        return (k == 0 ? kern_a : kern_b)(nullptr, sdp[0], sdp[1], sdp[2], sdp[3], sdp[4], sdp[5], sdp[6], sdp[7], sdp[8],
                                          in0.raw_buffer(), in1.raw_buffer(), out[k].raw_buffer());
    };
    if (call(0) != 0 || call(1) != 0) return std::fprintf(stderr, "a kernel returned an error\n"), 1;
    double diff = 0;
    out[0].for_each_value([&](T a, T b) { diff = std::max(diff, static_cast<double>(std::fabs(a - b))); }, out[1]);
    std::printf("max |a - b| = %g\n", diff);
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
            if (only >= 0 && k != only) continue;
            std::vector<double> ms;
            const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
            while (std::chrono::steady_clock::now() < end || ms.size() < 5) {
                const auto t0 = std::chrono::steady_clock::now();
                call(k);
                ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            }
            std::sort(ms.begin(), ms.end());
            best[k] = std::min(best[k], ms[ms.size() / 2]);
        }
    }
    if (only >= 0) return std::printf("%s %.4f ms\n", only == 0 ? "A" : "B", best[only]), 0;
    std::printf("A %.4f ms  B %.4f ms  A/B %.3f\n", best[0], best[1], best[0] / best[1]);
    return diff > 1e-3 ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 5) return std::fprintf(stderr, "usage: kernel_ab FIXED IN0 IN1 OUT [ROUNDS [ONLY]]\n"), 2;
    const Fixed f = convgrad::gen::parse_fixed_values(argv[1]);
    const int rounds = argc > 5 ? std::atoi(argv[5]) : 5, only = argc > 6 ? std::atoi(argv[6]) : -1;
    // The library's scratch allocator and thread pool, as the kernels run under them (Halide's
    // own malloc and free return large blocks to the system between calls: page faults a call).
    convgrad::set_pool_threads(2);
    halide_set_custom_do_par_for(convgrad::convgrad_do_par_for);
    halide_set_custom_malloc(convgrad::kernel_malloc);
    halide_set_custom_free(convgrad::kernel_free);
    const char *dtype = std::getenv("KERNEL_AB_DTYPE");
    if (dtype == nullptr || std::string(dtype) == "float32") return run<float>(argv, f, rounds, only);
    if (std::string(dtype) == "float64") return run<double>(argv, f, rounds, only);
    if (std::string(dtype) == "int32") return run<int32_t>(argv, f, rounds, only);
    return std::fprintf(stderr, "KERNEL_AB_DTYPE=%s: float32, float64 or int32\n", dtype), 2;
}
