// 16-bit problems on the CPU run on the float32 kernels (runtime/src/widening.h, execute.cpp):
// the copies into float32 exact, the results rounded to nearest even as the compiler's own
// half type and a plain bfloat16 rounding do, over views of any strides, and the calls routed
// to float32 kernels with direct sums (no Winograd). int32 problems run on the float64 ones
// while their sums are exact there, wrapped back to 32 bits, and on int32's generic kernel
// past that.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "contract.h"
#include "dilation_phases.h"
#include "reference_nd.h"
#include "test_util.h"
#include "widening.h"

namespace convgrad::test {
namespace {

// A 1-D view of `n` elements `stride` apart.
CanonicalView row_view(void *data, DType t, int64_t n, int64_t stride = 1) {
    CanonicalView v;
    v.data = data, v.dtype = t;
    v.extent[canonical::kX] = n, v.stride[canonical::kX] = stride;
    return v;
}

float float_of(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// bfloat16 by comparing the two neighbours in double (not the bit trick of the runtime and
// test_util): the nearer, at a tie the one with an even last bit.
uint16_t bf16_by_neighbours(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t below = u & 0xffff0000u, above = below + 0x10000u;  // toward zero, away
    // (Past the largest bfloat16, the neighbour away from zero is 2^128: infinity's encoding.)
    const double away = (above & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), f)
                                                            : double(float_of(above));
    const double to_below = std::fabs(double(f) - double(float_of(below)));
    const double to_above = std::fabs(away - double(f));
    if (to_below < to_above || (to_below == to_above && ((below >> 16) & 1) == 0)) return uint16_t(below >> 16);
    return uint16_t(above >> 16);
}

// float32 values that test rounding: random bit patterns over every exponent, the midpoints
// between neighbouring values of `t` (ties) and their neighbours, float16's subnormals and
// the overflow threshold.
std::vector<float> rounding_cases(DType t) {
    std::vector<float> v;
    Rng rng(71);
    std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
    for (int i = 0; i < 200000; i++) {
        const float f = float_of(bits(rng));
        if (std::isfinite(f)) v.push_back(f);
    }
    for (uint32_t h = 0; h < 0x7c00; h += 7) {  // ties between narrow neighbours
        const double lo = t == DType::kFloat16 ? load(t, &h) : double(float_of(h << 16));
        const uint32_t next = h + 1;
        const double hi = t == DType::kFloat16 ? load(t, &next) : double(float_of(next << 16));
        const float mid = static_cast<float>((lo + hi) / 2);  // exact in float32
        for (float m : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) v.push_back(m), v.push_back(-m);
    }
    for (float f : {65504.0f, 65519.99f, 65520.0f, 70000.0f, 3.4e38f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f,
                    0x1.ffcp-15f, 0x1.ffep-15f, 0x1p-14f, 1e-30f, 0.0f})
        v.push_back(f), v.push_back(-f);
    return v;
}

void expect_narrows_to_nearest_even(DType t) {
    const std::vector<float> in = rounding_cases(t);
    std::vector<uint16_t> out(in.size(), 0xdead);
    narrow(row_view(const_cast<float *>(in.data()), DType::kFloat32, int64_t(in.size())),
           row_view(out.data(), t, int64_t(in.size())));
    int wrong = 0;
    for (size_t i = 0; i < in.size() && wrong < 10; i++) {
        uint16_t want;
        if (t == DType::kFloat16) {
            store(t, &want, in[i]);  // the compiler's _Float16 (__fp16 on AArch64)
        } else {
            want = bf16_by_neighbours(in[i]);
        }
        if (out[i] != want) wrong++;
        EXPECT_EQ(out[i], want) << dtype_name(t) << " of " << std::hexfloat << in[i];
    }
}

TEST(Widening, NarrowsFloat16ToNearestEven) { expect_narrows_to_nearest_even(DType::kFloat16); }
TEST(Widening, NarrowsBFloat16ToNearestEven) { expect_narrows_to_nearest_even(DType::kBFloat16); }

// Every 16-bit pattern: widened exactly (NaN to NaN), and narrowed back to itself.
TEST(Widening, EveryPatternWidensExactlyAndBack) {
    for (DType t : {DType::kFloat16, DType::kBFloat16}) {
        std::vector<uint16_t> bits(65536), back(65536, 0);
        for (uint32_t i = 0; i < 65536; i++) bits[i] = uint16_t(i);
        std::vector<float> wide(65536, 12345.0f);
        widen(row_view(bits.data(), t, 65536), row_view(wide.data(), DType::kFloat32, 65536));
        narrow(row_view(wide.data(), DType::kFloat32, 65536), row_view(back.data(), t, 65536));
        int wrong = 0;
        for (uint32_t i = 0; i < 65536 && wrong < 10; i++) {
            const double want = load(t, &bits[i]);
            const bool ok = std::isnan(want) ? std::isnan(wide[i]) && std::isnan(load(t, &back[i]))
                                             : double(wide[i]) == want && back[i] == bits[i];
            if (!ok) wrong++;
            EXPECT_TRUE(ok) << dtype_name(t) << " bits 0x" << std::hex << i << ": widened " << wide[i]
                            << ", back 0x" << back[i];
        }
    }
}

// Views with gaps in every dim and their order permuted, large enough for many parallel
// tasks (whose boundaries fall inside rows): every element reaches its place, and narrowing
// writes no gap.
TEST(Widening, GappedPermutedViewsOfManyTasks) {
    const int64_t extent[6] = {3, 37, 5, 2, 4, 61};  // c, x, y, z, g, n: 270840 elements
    int64_t stride[6];
    // Channels-last order (c, g, x, y, z, n), each stride one element past the dense one.
    int64_t next = 2;
    for (int dim : {canonical::kC, canonical::kG, canonical::kX, canonical::kY, canonical::kZ, canonical::kN}) {
        stride[dim] = next;
        next = next * extent[dim] + 1;
    }
    for (DType t : {DType::kFloat16, DType::kBFloat16}) {
        std::vector<uint16_t> narrow_data(next, 0x7e00), out(next, 0x1234);
        CanonicalView nv;
        nv.dtype = t;
        for (int d = 0; d < 6; d++) nv.extent[d] = extent[d], nv.stride[d] = stride[d];
        Rng rng(72);
        const auto offset = [&](const int64_t (&i)[6]) {
            int64_t o = 0;
            for (int d = 0; d < 6; d++) o += i[d] * stride[d];
            return o;
        };
        std::vector<int64_t> offsets;
        int64_t i[6];
        for (i[5] = 0; i[5] < extent[5]; i[5]++)
            for (i[4] = 0; i[4] < extent[4]; i[4]++)
                for (i[3] = 0; i[3] < extent[3]; i[3]++)
                    for (i[2] = 0; i[2] < extent[2]; i[2]++)
                        for (i[1] = 0; i[1] < extent[1]; i[1]++)
                            for (i[0] = 0; i[0] < extent[0]; i[0]++) offsets.push_back(offset(i));
        for (int64_t o : offsets) store(t, &narrow_data[o], random_values(1, rng)[0]);
        std::vector<float> wide(offsets.size(), 0.0f);
        nv.data = narrow_data.data();
        const CanonicalView wv = [&] {
            CanonicalView v = like_compact(nv, wide.data());
            v.dtype = DType::kFloat32;
            return v;
        }();
        widen(nv, wv);
        CanonicalView ov = nv;
        ov.data = out.data();
        narrow(wv, ov);
        int wrong = 0;
        for (size_t k = 0; k < offsets.size() && wrong < 10; k++) {
            // The compact twin in channels-last order: element k of the C-order walk above
            // (n outermost, c innermost) sits at its own offset there.
            int64_t rest = int64_t(k), idx[6];
            for (int d = 0; d < 6; d++) idx[d] = rest % extent[d], rest /= extent[d];
            int64_t w = 0;
            for (int d = 0; d < 6; d++) w += idx[d] * wv.stride[d];
            const bool ok = double(wide[w]) == load(t, &narrow_data[offsets[k]]) && out[offsets[k]] == narrow_data[offsets[k]];
            if (!ok) wrong++;
            EXPECT_TRUE(ok) << dtype_name(t) << " element " << k;
            out[offsets[k]] = 0x1234;
        }
        int64_t gaps_written = 0;
        for (uint16_t b : out) gaps_written += b != 0x1234;
        EXPECT_EQ(gaps_written, 0) << dtype_name(t);
    }
}

// A 16-bit problem the float32 kernels would run with Winograd (3x3, unit strides, 32 -> 64
// channels) takes a direct float32 kernel: Winograd's transforms round differently from a
// direct sum, past the 16-bit precision bound near cancellations. And it meets that bound.
TEST(Widening, SixteenBitProblemsTakeDirectFloat32Kernels) {
    NdConv c;
    c.rank = 2, c.batch = 2, c.groups = 1, c.cin = 32, c.cout = 64;
    c.in = {12, 12}, c.out = {12, 12}, c.kernel = {3, 3}, c.stride = {1, 1}, c.dilation = {1, 1}, c.pad_begin = {1, 1};
    for (bool nxc : {true, false}) {
        ASSERT_NE(routed_kernel(to_problem(c, DType::kFloat32, nxc, nxc), Direction::kBackwardData).find("_wg"),
                  std::string::npos) << "no longer a Winograd problem in float32: pick one that is";
        for (DType t : {DType::kFloat16, DType::kBFloat16}) {
            const ConvProblem p = to_problem(c, t, nxc, nxc);
            SCOPED_TRACE(std::string(dtype_name(t)) + (nxc ? " NHWC" : " NCHW"));
            for (Direction d : {Direction::kBackwardData, Direction::kBackwardWeights}) {
                const std::string k = routed_kernel(p, d);
                EXPECT_NE(k.find("_f32_"), std::string::npos) << k;
                EXPECT_EQ(k.find("_wg"), std::string::npos) << k;
            }
            Rng rng(73);
            const auto w = random_inputs(t, num_elements(c.w_shape()), rng, 100);
            const auto dy = random_inputs(t, num_elements(c.dy_shape()), rng, 100);
            const Layouts layouts{c, nxc, nxc};
            const RunResult r =
                run_problem(p, Direction::kBackwardData, layouts.to_act(dy, c.dy_shape()), layouts.to_filter(w), true);
            ASSERT_TRUE(r.status.is_ok()) << r.status.message();
            const auto dx = layouts.from_act(r.result, c.x_shape());
            EXPECT_LE(check_contract(t, dx, nd_backprop_data(c, w, dy), nd_backprop_data(c, absolute(w), absolute(dy)),
                                     c.cout * 9),
                      1.0);
        }
    }
}

// int32 into float64 and back: every value exact, the largest magnitude found wherever it
// lies among many tasks (INT32_MIN's 2^31 too), and float64 integers past 32 bits wrapped as
// int32 arithmetic wraps, into a strided view whose gaps stay untouched.
TEST(Widening, Int32WidensExactlyAndWrapsBack) {
    const int64_t n = 100003;  // ~6 tasks
    Rng rng(74);
    std::vector<int32_t> v(n);
    for (int32_t &x : v) x = static_cast<int32_t>(pick(rng, -999999, 999999));
    v[54321] = -1000000;
    std::vector<double> wide(n, 0.5);
    EXPECT_EQ(widen(row_view(v.data(), DType::kInt32, n), row_view(wide.data(), DType::kFloat64, n)), 1000000u);
    for (int64_t i = 0; i < n; i++) ASSERT_EQ(wide[i], double(v[i])) << "element " << i;
    for (int32_t extreme : {INT32_MAX, -INT32_MAX, INT32_MIN}) {
        v[77777] = extreme;
        const uint32_t want = extreme == INT32_MIN ? 2147483648u : 2147483647u;
        EXPECT_EQ(largest_magnitude(row_view(v.data(), DType::kInt32, n)), want) << extreme;
        EXPECT_EQ(widen(row_view(v.data(), DType::kInt32, n), row_view(wide.data(), DType::kFloat64, n)), want);
        EXPECT_EQ(wide[77777], double(extreme));
    }
    const double two52 = std::ldexp(1.0, 52);
    const std::vector<double> sums = {0, -7, 2147483647.0, 2147483648.0, -2147483649.0, 4294967301.0,
                                      -two52, two52 + 12345, 2 * two52, -3.0 * 1099511627776.0 - 1};
    for (int64_t stride : {1, 2}) {
        std::vector<int32_t> back(2 * sums.size(), 0x5eed);
        narrow(row_view(const_cast<double *>(sums.data()), DType::kFloat64, int64_t(sums.size())),
               row_view(back.data(), DType::kInt32, int64_t(sums.size()), stride));
        for (size_t i = 0; i < sums.size(); i++) {
            const int32_t want = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(sums[i])));
            EXPECT_EQ(back[stride * i], want) << sums[i] << ", stride " << stride;
            if (stride == 2) EXPECT_EQ(back[2 * i + 1], 0x5eed) << "gap " << i;
        }
    }
}

// int32 problems run on the float64 kernels while every sum is exact there, and on int32's
// generic kernel from the first value past that: the data gradient's 8 products per element
// (8 dy channels, a 1x1 filter) of magnitudes up to 2^25 * 2^25 reach 2^53 exactly, and the
// filter gradient's 32 (2 images of 4x4) of 2^24 * 2^24. Both routes give int32 arithmetic's
// wrapped sums, checked against a plain one in 64-bit wrapping integers.
TEST(Widening, Int32ProblemsTakeFloat64KernelsWhileExact) {
    NdConv c;
    c.rank = 2, c.batch = 2, c.groups = 1, c.cin = 3, c.cout = 8;
    c.in = {4, 4}, c.out = {4, 4}, c.kernel = {1, 1}, c.stride = {1, 1}, c.dilation = {1, 1}, c.pad_begin = {0, 0};
    const int64_t pixels = 16;
    // Values up to `largest` in magnitude, `largest` itself among them (at `at`).
    Rng rng(75);
    const auto values = [&](int64_t count, int64_t largest, int64_t at) {
        std::vector<double> v(count);
        for (double &x : v) x = double(pick(rng, -largest, largest));
        v[at] = double(largest);
        return v;
    };
    // Plain sums of a 1x1 convolution's gradients in uint64 arithmetic (int32's wrap, mod 2^32).
    const auto wrapped = [](uint64_t sum) { return double(static_cast<int32_t>(static_cast<uint32_t>(sum))); };
    const auto data_ref = [&](const std::vector<double> &dy, const std::vector<double> &w) {  // dx [N, Cin, 16]
        std::vector<double> dx(c.batch * c.cin * pixels);
        for (int64_t n = 0; n < c.batch; n++)
            for (int64_t ci = 0; ci < c.cin; ci++)
                for (int64_t p = 0; p < pixels; p++) {
                    uint64_t sum = 0;
                    for (int64_t co = 0; co < c.cout; co++) {
                        sum += uint64_t(int64_t(dy[(n * c.cout + co) * pixels + p]) * int64_t(w[co * c.cin + ci]));
                    }
                    dx[(n * c.cin + ci) * pixels + p] = wrapped(sum);
                }
        return dx;
    };
    const auto filter_ref = [&](const std::vector<double> &x, const std::vector<double> &dy) {  // dw [Cout, Cin]
        std::vector<double> dw(c.cout * c.cin);
        for (int64_t co = 0; co < c.cout; co++)
            for (int64_t ci = 0; ci < c.cin; ci++) {
                uint64_t sum = 0;
                for (int64_t n = 0; n < c.batch; n++)
                    for (int64_t p = 0; p < pixels; p++) {
                        sum += uint64_t(int64_t(x[(n * c.cin + ci) * pixels + p]) * int64_t(dy[(n * c.cout + co) * pixels + p]));
                    }
                dw[co * c.cin + ci] = wrapped(sum);
            }
        return dw;
    };
    for (bool nxc : {true, false}) {
        const ConvProblem p = to_problem(c, DType::kInt32, nxc, nxc);
        const Layouts layouts{c, nxc, nxc};
        for (int64_t past : {0, 1}) {
            SCOPED_TRACE(std::string(nxc ? "NHWC" : "NCHW") + (past ? ", past 2^53" : ", at 2^53"));
            const std::string route = past ? "_i32_any" : "_f64_";
            const auto dy = values(num_elements(c.dy_shape()), int64_t(1) << 25, 37);
            const auto w = values(num_elements(c.w_shape()), (int64_t(1) << 25) + past, 5);
            RunResult r = run_problem(
                p, Direction::kBackwardData, layouts.to_act(dy, c.dy_shape()), layouts.to_filter(w), true);
            ASSERT_TRUE(r.status.is_ok()) << r.status.message();
            EXPECT_NE(r.kernel.find(route), std::string::npos) << r.kernel;
            EXPECT_EQ(layouts.from_act(r.result, c.x_shape()), data_ref(dy, w));
            const auto x = values(num_elements(c.x_shape()), (int64_t(1) << 24) + past, 11);
            const auto dy2 = values(num_elements(c.dy_shape()), int64_t(1) << 24, 50);
            r = run_problem(p, Direction::kBackwardWeights, layouts.to_act(x, c.x_shape()),
                            layouts.to_act(dy2, c.dy_shape()), true);
            ASSERT_TRUE(r.status.is_ok()) << r.status.message();
            EXPECT_NE(r.kernel.find(route), std::string::npos) << r.kernel;
            EXPECT_EQ(layouts.from_filter(r.result), filter_ref(x, dy2));
        }
    }
}

}  // namespace
}  // namespace convgrad::test
