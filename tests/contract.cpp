// The dtype precision contract (contract.h), shared by the CPU and GPU tests.
#include "contract.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "reference_nd.h"

namespace convgrad::test {

int64_t pick(Rng &rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

DType accumulator(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16 ? DType::kFloat32 : t; }

// A canonical problem (NCX or NXC activations, OIX or XIO filters) mirroring reference `c`.
ConvProblem to_problem(const NdConv &c, DType dtype, bool nxc, bool xio) {
    ConvProblem p;
    p.spatial_rank = c.rank;
    p.batch = c.batch, p.groups = c.groups, p.in_channels = c.cin, p.out_channels = c.cout;
    p.dtype = dtype;
    p.activation_layout = nxc ? ActivationLayout::kNXC : ActivationLayout::kNCX;
    p.filter_layout = xio ? FilterLayout::kXIO : FilterLayout::kOIX;
    for (int a = 0; a < c.rank; a++) {
        p.input_size[a] = c.in[a], p.output_size[a] = c.out[a], p.kernel_size[a] = c.kernel[a];
        p.strides[a] = c.stride[a], p.dilations[a] = c.dilation[a], p.pads_begin[a] = c.pad_begin[a];
        // pads_end consistent with the sizes (kernels do not read it).
        p.pads_end[a] = c.stride[a] * (c.out[a] - 1) + (c.kernel[a] - 1) * c.dilation[a] + 1 - c.in[a] - c.pad_begin[a];
    }
    return p;
}

NdConv random_problem(Rng &rng, ProblemMix mix) {
    const bool long_reduction = mix == ProblemMix::kLongReductions, wide = mix == ProblemMix::kWideChannels;
    while (true) {
        NdConv c;
        c.rank = long_reduction ? 2 : static_cast<int>(pick(rng, 1, wide ? 2 : 3));
        c.batch = long_reduction ? 4 : pick(rng, 1, 2);
        c.groups = pick(rng, 1, 2);
        c.cin = c.groups * (wide ? pick(rng, 16, 40) : pick(rng, 1, 5));
        c.cout = c.groups * (wide ? pick(rng, 16, 40) : pick(rng, 1, 5));
        bool ok = true;
        for (int a = 0; a < c.rank; a++) {
            const int64_t in = long_reduction ? 64 : pick(rng, 1, c.rank == 3 ? 6 : 10);
            const int64_t k = pick(rng, 1, 3), s = long_reduction ? 1 : pick(rng, 1, 2), d = pick(rng, 1, 2);
            const int64_t pb = pick(rng, 0, 2), pe = pick(rng, 0, 2), ke = (k - 1) * d + 1;
            const int64_t span = in + pb + pe - ke;
            c.in.push_back(in), c.kernel.push_back(k), c.stride.push_back(s), c.dilation.push_back(d);
            c.pad_begin.push_back(pb);
            c.out.push_back(span < 0 ? 0 : span / s + 1);
            ok = ok && c.out.back() >= 1;
        }
        if (ok) return c;
    }
}

std::vector<double> random_inputs(DType t, int64_t n, Rng &rng, double int_range) {
    std::vector<double> v = random_values(n, rng);
    for (double &x : v) {
        x = t == DType::kInt32 ? std::copysign(std::ceil(std::fabs(x) * int_range), x) : round_to(t, x);
    }
    return v;
}

std::vector<double> absolute(std::vector<double> v) {
    for (double &x : v) x = std::fabs(x);
    return v;
}

// Checks `got` against the contract; returns the worst |err| / bound seen (<= 1 passes).
double check_contract(DType t, const std::vector<double> &got, const std::vector<double> &ref,
                      const std::vector<double> &abs_ref, int64_t terms) {
    EXPECT_EQ(got.size(), ref.size());
    double worst = 0;
    if (t == DType::kInt32) {
        for (size_t i = 0; i < got.size(); i++) {
            const int32_t wrapped = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(ref[i])));
            EXPECT_EQ(got[i], wrapped) << "element " << i;
            if (got[i] != wrapped) return 1e9;
        }
        return 0;
    }
    const double u_out = unit_roundoff(t), u_acc = unit_roundoff(accumulator(t));
    const double gamma = terms * u_acc / (1 - terms * u_acc);
    const double tiny = t == DType::kFloat16 ? std::ldexp(1.0, -25) : 0;
    for (size_t i = 0; i < got.size(); i++) {
        const double bound = u_out * std::fabs(ref[i]) + (1 + u_out) * gamma * abs_ref[i] + tiny;
        const double err = std::fabs(got[i] - ref[i]);
        EXPECT_TRUE(std::isfinite(got[i]) && err <= bound)
            << "element " << i << ": got " << got[i] << ", reference " << ref[i] << ", bound " << bound;
        if (!(err <= bound)) return 1e9;
        if (bound > 0) worst = std::max(worst, err / bound);
    }
    return worst;
}

void check_dtype(DType t, ProblemMix mix, uint64_t seed, int cases, const TestDevice &on) {
    const bool long_reduction = mix == ProblemMix::kLongReductions;
    Rng rng(seed);
    double worst = 0;
    for (int i = 0; i < cases; i++) {
        const NdConv c = random_problem(rng, mix);
        const bool nxc = pick(rng, 0, 1), xio = pick(rng, 0, 1), gapped = pick(rng, 0, 4) == 0;
        const ConvProblem p = to_problem(c, t, nxc, xio);
        SCOPED_TRACE(std::string(dtype_name(t)) + " case " + std::to_string(i) + (nxc ? " NXC" : " NCX") +
                     (xio ? " XIO" : " OIX") + " x " + shape_string(c.x_shape()) + " w " + shape_string(c.w_shape()));
        ASSERT_TRUE(validate(p).is_ok()) << validate(p).message();
        const double range = 100;  // int32: exact products and sums
        const auto x = random_inputs(t, num_elements(c.x_shape()), rng, range);
        const auto w = random_inputs(t, num_elements(c.w_shape()), rng, range);
        const auto dy = random_inputs(t, num_elements(c.dy_shape()), rng, range);
        const Layouts layouts{c, nxc, xio};
        int64_t taps = 1, positions = c.batch;
        for (int a = 0; a < c.rank; a++) taps *= c.kernel[a], positions *= c.out[a];

        if (!long_reduction || i % 2 == 0) {
            const RunResult r = run_problem(
                p, Direction::kBackwardData, layouts.to_act(dy, c.dy_shape()), layouts.to_filter(w), gapped, on);
            ASSERT_TRUE(r.status.is_ok()) << r.status.message();
            const auto dx = layouts.from_act(r.result, c.x_shape());
            worst = std::max(worst, check_contract(t, dx, nd_backprop_data(c, w, dy),
                                                   nd_backprop_data(c, absolute(w), absolute(dy)),
                                                   (c.cout / c.groups) * taps));
        }
        const RunResult r = run_problem(p, Direction::kBackwardWeights, layouts.to_act(x, c.x_shape()),
                                        layouts.to_act(dy, c.dy_shape()), gapped, on);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        worst = std::max(worst, check_contract(t, layouts.from_filter(r.result), nd_backprop_filter(c, x, dy),
                                               nd_backprop_filter(c, absolute(x), absolute(dy)), positions));
    }
    // The bound must also be meaningful: errors of 16-bit results reach a visible part of it.
    const char *mix_name = long_reduction ? " long reductions" : mix == ProblemMix::kWideChannels ? " wide channels" : "";
    std::printf("[ %s%s on %s ] worst error / bound = %.3g over %d problems\n", dtype_name(t), mix_name,
                device_name(on.device), worst, cases);
}

}  // namespace convgrad::test
