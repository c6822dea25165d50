// 16-bit floats to float32, int32 to float64, and back (widening.h).
#include "widening.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "dilation_phases.h"
#include "halide_bridge.h"
#include "thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace convgrad {
namespace {

[[maybe_unused]] float bits_to_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

[[maybe_unused]] uint32_t float_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// bfloat16 is float32's upper half: its bits shifted, rounded to nearest even on the way
// back. Branch-free over uint32_t bits, so the compiler vectorises the runs.
uint32_t bf16_to_float_bits(uint16_t b) { return uint32_t(b) << 16; }

uint16_t float_bits_to_bf16(uint32_t u) {
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x40;
    return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// IEEE half in portable code (unused on AArch64): where neither the CPU's conversions (F16C) nor the compiler's
// half type (AArch64's __fp16) are at hand.
[[maybe_unused]] float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
    if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
    if (exponent != 0) return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
    return bits_to_float(sign | float_to_bits(float(mantissa) * 0x1p-24f));  // zero, subnormal: exact
}

[[maybe_unused]] uint16_t float_to_half(float f) {
    uint32_t u = float_to_bits(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((u >> 13) & 0x3ffu));  // NaN, quieted
    if (u >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // from 65520 (the tie above 65504): inf
    if (u >= 0x38800000u) {  // a normal half (2^-14 or more): round at bit 13, then rebias
        const uint32_t rounded = u + 0xfffu + ((u >> 13) & 1);
        return uint16_t(sign | ((rounded - (112u << 23)) >> 13));
    }
    // Subnormal halves are multiples of 2^-24: scaled by 2^24 (exact), rounded to an integer
    // to nearest even (the default rounding mode); 1024 is the smallest normal's encoding.
    return uint16_t(sign | uint16_t(std::nearbyint(bits_to_float(u) * 0x1p24f)));
}

#if defined(__aarch64__)
// The CPU's own conversions (fcvt; vectorised over unit strides).
void half_run_to_float(const uint16_t *h, int64_t stride, float *f, int64_t n) {
    const __fp16 *v = reinterpret_cast<const __fp16 *>(h);
    if (stride == 1) {
        for (int64_t i = 0; i < n; i++) f[i] = v[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) f[i] = v[i * stride];
}
void float_run_to_half(const float *f, uint16_t *h, int64_t stride, int64_t n) {
    __fp16 *v = reinterpret_cast<__fp16 *>(h);
    if (stride == 1) {
        for (int64_t i = 0; i < n; i++) v[i] = static_cast<__fp16>(f[i]);
        return;
    }
    for (int64_t i = 0; i < n; i++) v[i * stride] = static_cast<__fp16>(f[i]);
}
#else
#if defined(__x86_64__)
// F16C (every x86 CPU with AVX2, and most with AVX): 8 conversions an instruction.
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
__attribute__((target("avx,f16c"))) void half_run_to_float_f16c(const uint16_t *h, int64_t stride, float *f, int64_t n) {
    int64_t i = 0;
    if (stride == 1) {
        for (; i + 8 <= n; i += 8) {
            _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i))));
        }
    }
    for (; i < n; i++) f[i] = _cvtsh_ss(h[i * stride]);
}
__attribute__((target("avx,f16c"))) void float_run_to_half_f16c(const float *f, uint16_t *h, int64_t stride, int64_t n) {
    int64_t i = 0;
    if (stride == 1) {
        for (; i + 8 <= n; i += 8) {
            _mm_storeu_si128(reinterpret_cast<__m128i *>(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(f + i), kRound));
        }
    }
    for (; i < n; i++) h[i * stride] = _cvtss_sh(f[i], kRound);
}
// F16C and AVX2: where the kernels take the AVX2 path (which needs both) or better; so the
// SSE4.1 path (CONVGRAD_MAX_CPU_ISA=sse41, the tests' isa_path_sse41) runs the portable code.
bool avx2_f16c() {
    static const bool yes = cpu_takes_avx2();
    return yes;
}
#endif
void half_run_to_float(const uint16_t *h, int64_t stride, float *f, int64_t n) {
#if defined(__x86_64__)
    if (avx2_f16c()) return half_run_to_float_f16c(h, stride, f, n);
#endif
    for (int64_t i = 0; i < n; i++) f[i] = half_to_float(h[i * stride]);
}
void float_run_to_half(const float *f, uint16_t *h, int64_t stride, int64_t n) {
#if defined(__x86_64__)
    if (avx2_f16c()) return float_run_to_half_f16c(f, h, stride, n);
#endif
    for (int64_t i = 0; i < n; i++) h[i * stride] = float_to_half(f[i]);
}
#endif

// (The float32 side as its bits: the copies' memory is the runtime's own, read by the
// kernels in another translation unit.)
inline void bf16_run_to_float_any(const uint16_t *b, int64_t stride, float *f, int64_t n) {
    uint32_t *bits = reinterpret_cast<uint32_t *>(f);
    if (stride == 1) {
        for (int64_t i = 0; i < n; i++) bits[i] = bf16_to_float_bits(b[i]);
        return;
    }
    for (int64_t i = 0; i < n; i++) bits[i] = bf16_to_float_bits(b[i * stride]);
}
inline void float_run_to_bf16_any(const float *f, uint16_t *b, int64_t stride, int64_t n) {
    const uint32_t *bits = reinterpret_cast<const uint32_t *>(f);
    if (stride == 1) {
        for (int64_t i = 0; i < n; i++) b[i] = float_bits_to_bf16(bits[i]);
        return;
    }
    for (int64_t i = 0; i < n; i++) b[i * stride] = float_bits_to_bf16(bits[i]);
}
#if defined(__x86_64__)
// The same loops vectorised for AVX2 (the runtime's baseline is SSE2, whose 16-byte packing
// of the rounded halves made narrowing 2.7x slower than F16C's: 0.60 against 0.22 ms for
// 1.2M elements).
__attribute__((target("avx2"))) void bf16_run_to_float_avx2(const uint16_t *b, int64_t stride, float *f, int64_t n) {
    bf16_run_to_float_any(b, stride, f, n);
}
__attribute__((target("avx2"))) void float_run_to_bf16_avx2(const float *f, uint16_t *b, int64_t stride, int64_t n) {
    float_run_to_bf16_any(f, b, stride, n);
}
#endif
void bf16_run_to_float(const uint16_t *b, int64_t stride, float *f, int64_t n) {
#if defined(__x86_64__)
    if (avx2_f16c()) return bf16_run_to_float_avx2(b, stride, f, n);
#endif
    bf16_run_to_float_any(b, stride, f, n);
}
void float_run_to_bf16(const float *f, uint16_t *b, int64_t stride, int64_t n) {
#if defined(__x86_64__)
    if (avx2_f16c()) return float_run_to_bf16_avx2(f, b, stride, n);
#endif
    float_run_to_bf16_any(f, b, stride, n);
}

// int32 to float64 (exact), keeping the largest magnitude; back, the float64 sums being exact
// integers (execute.cpp checks they are), wrapped to 32 bits as int32 arithmetic wraps.
inline uint32_t magnitude(int32_t v) { return v < 0 ? 0u - uint32_t(v) : uint32_t(v); }
inline uint32_t int_run_to_double_any(const int32_t *s, int64_t stride, double *d, int64_t n) {
    uint32_t largest = 0;
    for (int64_t i = 0; i < n; i++) {
        const int32_t v = s[i * stride];
        if (d != nullptr) d[i] = v;
        largest = std::max(largest, magnitude(v));
    }
    return largest;
}
inline void double_run_to_int_any(const double *d, int32_t *s, int64_t stride, int64_t n) {
    for (int64_t i = 0; i < n; i++) s[i * stride] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(d[i])));
}
#if defined(__x86_64__)
// AVX2 over unit-stride runs (GCC leaves the loops above scalar: ~1 element a nanosecond).
__attribute__((target("avx2"))) uint32_t int_run_to_double_avx2(const int32_t *s, int64_t stride, double *d, int64_t n) {
    int64_t i = 0;
    __m256i largest = _mm256_setzero_si256();
    if (stride == 1) {
        // (|INT32_MIN| as _mm256_abs_epi32 leaves it, 0x80000000, is 2^31 unsigned.)
        for (; i + 8 <= n; i += 8) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i));
            largest = _mm256_max_epu32(largest, _mm256_abs_epi32(v));
            if (d != nullptr) {
                _mm256_storeu_pd(d + i, _mm256_cvtepi32_pd(_mm256_castsi256_si128(v)));
                _mm256_storeu_pd(d + i + 4, _mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1)));
            }
        }
    }
    alignas(32) uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), largest);
    uint32_t m = int_run_to_double_any(s + i * stride, stride, d == nullptr ? nullptr : d + i, n - i);
    for (uint32_t lane : lanes) m = std::max(m, lane);
    return m;
}
// The low 32 bits of an exact integer of at most 2^53 in magnitude without a 64-bit
// conversion (AVX-512's): lo = v - floor(v / 2^32) * 2^32, in [0, 2^32) (every step exact),
// then lo + 2^52, whose mantissa's low 32 bits are lo.
__attribute__((target("avx2"))) void double_run_to_int_avx2(const double *d, int32_t *s, int64_t stride, int64_t n) {
    int64_t i = 0;
    const __m256d two32 = _mm256_set1_pd(4294967296.0), inverse = _mm256_set1_pd(1.0 / 4294967296.0),
                  two52 = _mm256_set1_pd(4503599627370496.0);
    const __m256i low_halves = _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0);
    for (; i + 4 <= n; i += 4) {
        const __m256d v = _mm256_loadu_pd(d + i);
        const __m256d high = _mm256_floor_pd(_mm256_mul_pd(v, inverse));
        const __m256d low = _mm256_add_pd(_mm256_sub_pd(v, _mm256_mul_pd(high, two32)), two52);
        const __m128i r = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(low), low_halves));
        if (stride == 1) {
            _mm_storeu_si128(reinterpret_cast<__m128i *>(s + i), r);
        } else {
            alignas(16) int32_t out[4];
            _mm_store_si128(reinterpret_cast<__m128i *>(out), r);
            for (int j = 0; j < 4; j++) s[(i + j) * stride] = out[j];
        }
    }
    double_run_to_int_any(d + i, s + i * stride, stride, n - i);
}
#endif
// (d == nullptr: the largest magnitude alone.)
uint32_t int_run_to_double(const int32_t *s, int64_t stride, double *d, int64_t n) {
#if defined(__x86_64__)
    if (avx2_f16c()) return int_run_to_double_avx2(s, stride, d, n);
#endif
    return int_run_to_double_any(s, stride, d, n);
}
void double_run_to_int(const double *d, int32_t *s, int64_t stride, int64_t n) {
#if defined(__x86_64__)
    if (avx2_f16c()) return double_run_to_int_avx2(d, s, stride, n);
#endif
    double_run_to_int_any(d, s, stride, n);
}

// The element pairs of a narrow view and its compact wide twin, as the twin's order: the
// dims (extent 1 aside) by the twin's strides, merged where the narrow view is contiguous
// across them too (a dense tensor: one run of every element). Element i of the twin is at
// offset i; of the narrow view, at the offset of i's index in these dims.
struct Walk {
    int dims = 0;
    int64_t extent[6] = {1, 1, 1, 1, 1, 1};
    int64_t stride[6] = {1, 1, 1, 1, 1, 1};  // the narrow view's
    int64_t total = 1;
    void *narrow = nullptr;
    void *wide = nullptr;  // nullptr with int32: the largest magnitude alone
    bool to_wide = true;
    DType dtype = DType::kFloat16;
    std::atomic<uint32_t> *largest = nullptr;  // int32 to float64: the largest magnitude
};

Walk walk_of(const CanonicalView &narrow_view, const CanonicalView &wide_view, bool to_wide) {
    Walk w;
    int order[6] = {0, 1, 2, 3, 4, 5};
    std::stable_sort(order, order + 6, [&](int a, int b) { return wide_view.stride[a] < wide_view.stride[b]; });
    for (int dim : order) {
        const int64_t extent = narrow_view.extent[dim];
        if (extent == 1) continue;
        w.total *= extent;
        if (w.dims > 0 && narrow_view.stride[dim] == w.stride[w.dims - 1] * w.extent[w.dims - 1]) {
            w.extent[w.dims - 1] *= extent;
            continue;
        }
        w.extent[w.dims] = extent;
        w.stride[w.dims] = narrow_view.stride[dim];
        w.dims++;
    }
    w.dims = std::max(w.dims, 1);
    w.narrow = narrow_view.data;
    w.wide = wide_view.data;
    w.to_wide = to_wide;
    w.dtype = narrow_view.dtype;
    return w;
}

// Elements a task converts: 64 KB of float32, many tasks for the threads on large tensors.
constexpr int64_t kTaskElements = 16384;

// One run of n elements: the narrow view's from `offset` (its elements), the twin's from i.
void run(const Walk &w, int64_t offset, int64_t i, int64_t n, uint32_t &largest) {
    const int64_t stride = w.stride[0];
    switch (w.dtype) {
    case DType::kInt32: {
        int32_t *s = static_cast<int32_t *>(w.narrow) + offset;
        double *d = w.wide == nullptr ? nullptr : static_cast<double *>(w.wide) + i;
        if (w.to_wide) {
            largest = std::max(largest, int_run_to_double(s, stride, d, n));
        } else {
            double_run_to_int(d, s, stride, n);
        }
        return;
    }
    default: {
        const bool half = w.dtype == DType::kFloat16;
        uint16_t *h = static_cast<uint16_t *>(w.narrow) + offset;
        float *f = static_cast<float *>(w.wide) + i;
        if (w.to_wide) {
            (half ? half_run_to_float : bf16_run_to_float)(h, stride, f, n);
        } else {
            (half ? float_run_to_half : float_run_to_bf16)(f, h, stride, n);
        }
    }
    }
}

int convert_task(void *, int task, uint8_t *closure) {
    const Walk &w = *reinterpret_cast<const Walk *>(closure);
    int64_t i = task * kTaskElements;
    const int64_t end = std::min(w.total, i + kTaskElements);
    int64_t idx[6] = {0, 0, 0, 0, 0, 0}, offset = 0;
    for (int64_t d = 0, rest = i; d < w.dims; d++) {
        idx[d] = rest % w.extent[d], rest /= w.extent[d];
        offset += idx[d] * w.stride[d];
    }
    uint32_t largest = 0;
    while (i < end) {
        const int64_t n = std::min(w.extent[0] - idx[0], end - i);
        run(w, offset, i, n, largest);
        i += n;
        idx[0] += n, offset += n * w.stride[0];
        for (int d = 0; d + 1 < w.dims && idx[d] == w.extent[d]; d++) {  // carry
            offset += w.stride[d + 1] - idx[d] * w.stride[d];
            idx[d] = 0, idx[d + 1]++;
        }
    }
    if (w.largest != nullptr) {
        uint32_t seen = w.largest->load(std::memory_order_relaxed);
        while (largest > seen && !w.largest->compare_exchange_weak(seen, largest, std::memory_order_relaxed)) {
        }
    }
    return 0;
}

uint32_t convert(Walk w) {
    std::atomic<uint32_t> largest{0};
    w.largest = &largest;
    const int64_t tasks = (w.total + kTaskElements - 1) / kTaskElements;
    if (tasks <= 1) {
        convert_task(nullptr, 0, reinterpret_cast<uint8_t *>(&w));
    } else {
        convgrad_do_par_for(nullptr, convert_task, 0, static_cast<int>(tasks), reinterpret_cast<uint8_t *>(&w));
    }
    return largest.load();
}

}  // namespace

uint32_t widen(const CanonicalView &from, const CanonicalView &to) { return convert(walk_of(from, to, true)); }

void narrow(const CanonicalView &from, const CanonicalView &to) { convert(walk_of(to, from, false)); }

uint32_t largest_magnitude(const CanonicalView &v) {
    Walk w = walk_of(v, like_compact(v, nullptr), true);
    w.wide = nullptr;
    return convert(w);
}

}  // namespace convgrad
