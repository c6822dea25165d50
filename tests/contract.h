// The precision contract of every dtype (see dtype_test.cpp for the bound), checked on random
// problems against the float64 reference: shared by the CPU tests and the GPU tests, which
// run the same problems on a device.
#pragma once

#include <cstdint>
#include <vector>

#include "reference_nd.h"
#include "test_util.h"

namespace convgrad::test {

int64_t pick(Rng &rng, int64_t lo, int64_t hi);  // uniform in [lo, hi]
DType accumulator(DType t);                      // float32 for 16-bit floats, else t

// A canonical problem (NCX or NXC activations, OIX or XIO filters) mirroring reference `c`.
ConvProblem to_problem(const NdConv &c, DType dtype, bool nxc, bool xio);
// Which random problems: small (ranks 1-3, 1-2 groups of 1-5 channels, strides, dilations,
// pads); long reductions (2-D 64x64, batch 4); wide channels (16-40 per group, ranks 1-2:
// the GPU data gradient's 32-channel thread blocks, with a partial last one).
enum class ProblemMix { kSmall, kLongReductions, kWideChannels };
NdConv random_problem(Rng &rng, ProblemMix mix);
// Random values rounded to t (int32: integers up to int_range in magnitude).
std::vector<double> random_inputs(DType t, int64_t n, Rng &rng, double int_range);
std::vector<double> absolute(std::vector<double> v);

// Checks `got` against the contract; returns the worst |err| / bound seen (<= 1 passes).
double check_contract(DType t, const std::vector<double> &got, const std::vector<double> &ref,
                      const std::vector<double> &abs_ref, int64_t terms);

// Both gradients of `cases` random problems in dtype t (random layouts, some gapped), run
// on `on`, each checked against the contract.
void check_dtype(DType t, ProblemMix mix, uint64_t seed, int cases, const TestDevice &on = {});

}  // namespace convgrad::test
