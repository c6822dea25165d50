#include "peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace convgrad::bench {
namespace {

constexpr int kChains = 12;  // independent FMA chains: enough to cover latency x throughput
constexpr long kIters = 10'000'000;

// One function per ISA, each compiled for its own target, so the accumulators stay in
// registers. FMA(x, a, b) = x * a + b.
#define CONVGRAD_CHAINS(NAME, TARGET, VEC, SET1, FMA)                              \
    __attribute__((target(TARGET))) float NAME() {                                  \
        VEC acc[kChains];                                                           \
        for (int j = 0; j < kChains; j++) acc[j] = SET1(1.0f + j * 1e-3f);          \
        const VEC a = SET1(0.999999f), b = SET1(1e-7f);                             \
        for (long i = 0; i < kIters; i++) {                                         \
            for (int j = 0; j < kChains; j++) acc[j] = FMA(acc[j], a, b);           \
        }                                                                           \
        for (int j = 1; j < kChains; j++) acc[0] = FMA(acc[0], a, acc[j]);          \
        float out[sizeof(VEC) / sizeof(float)];                                     \
        std::memcpy(out, &acc[0], sizeof(VEC));                                     \
        return out[0];                                                              \
    }

#define CONVGRAD_MADD128(x, a, b) _mm_add_ps(_mm_mul_ps(x, a), b)
CONVGRAD_CHAINS(chains512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps)
CONVGRAD_CHAINS(chains256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps)
CONVGRAD_CHAINS(chains128, "sse2", __m128, _mm_set1_ps, CONVGRAD_MADD128)

}  // namespace

Peak measure_fma_peak(int threads, bool float64) {
    __builtin_cpu_init();
    Peak p;
    int lanes;
    float (*chains)();
    if (__builtin_cpu_supports("avx512f")) lanes = 16, chains = chains512, p.isa = "avx512 fma";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) lanes = 8, chains = chains256, p.isa = "avx2 fma";
    else lanes = 4, chains = chains128, p.isa = "sse mul+add";
    // An FMA is 2 flops; SSE's separate mul and add count as one flop each, at 2 instructions.
    const double flops_per_iter = (lanes == 4 ? 1.0 : 2.0) * lanes * kChains;
    // Best of 5: turbo ramp-up and a busy neighbour make single runs read low.
    std::vector<float> sink(threads);
    double best_s = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; t++) pool.emplace_back([&, t] { sink[t] = chains(); });
        for (auto &t : pool) t.join();
        best_s = std::min(best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    p.gflops = flops_per_iter * kIters * threads / best_s * 1e-9 / (float64 ? 2 : 1);
    if (sink[0] == 12345.f) p.gflops += 0;  // keep the results alive
    return p;
}

}  // namespace convgrad::bench
