// Helpers shared by the tests: seeded random data (never zeros), strided tensors with gaps,
// NaN-poisoned results, and one call path from TF attributes to a convgrad result.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../bench/tensor_allocator.h"
#include "convgrad/convgrad.h"
#include "convgrad/tf.h"
#include "reference.h"

namespace convgrad::test {

using Rng = std::mt19937_64;

// Uniform in ±[0.1, 1): random sign and magnitude, never zero.
std::vector<double> random_values(int64_t count, Rng &rng);

// Element conversions for every dtype, written plainly (independent of the kernels):
// float16 through the compiler's _Float16, bfloat16 by round-to-nearest-even on the bits.
double round_to(DType t, double v);            // the nearest value representable in t
void store(DType t, void *p, double v);        // writes round_to(t, v) (int32: wraps modulo 2^32)
double load(DType t, const void *p);
double unit_roundoff(DType t);                 // 2^-11, 2^-8, 2^-24, 2^-53; 0 for int32

// A tensor of any dtype over its own storage, 64-byte aligned as frameworks allocate
// tensors. With `gapped`, every dimension's stride leaves holes (a strided view inside a
// larger buffer), so no dimension is contiguous. `offset`: the tensor starts that many
// elements into its storage (1: no vector of it is aligned).
struct HostTensor {
    TensorBytes storage;
    Tensor tensor;
    int64_t offset = 0;

    HostTensor(const Shape &shape, bool gapped, DType dtype = DType::kFloat32, int64_t offset = 0);
    void fill(const std::vector<double> &values);      // logical C order, rounded to the dtype
    void poison();                                     // NaN (int32: a sentinel) everywhere
    std::vector<double> values() const;                // logical C order
};

// ||got - ref|| / ||ref|| (2-norm); +inf if any value of got is not finite.
double relative_error(const std::vector<double> &got, const std::vector<double> &ref);

std::string describe(const TfConv2D &c);

// The kernel the registry runs for a problem it gives `name` (e.g. "bwd_weights_f32_nxc_sg")
// where this CPU's path is AVX2 or better: `name` itself there, and on the SSE4.1 path (a
// CPU without AVX2, or CONVGRAD_MAX_CPU_ISA=sse41) for a kernel that has an SSE4.1 body.
// One built without (the table's from_avx2, generators/CMakeLists.txt) gives way there to
// its plain kernel: its layout, with the stride-2 view where that layout has one.
std::string kernel_on_this_path(const std::string &name);

// A TF Conv2D over NHWC `input` (TF's filter [KH, KW, C_in/G, C_out]): dy's shape is left to
// infer_out_backprop.
TfConv2D conv(std::vector<int64_t> input, std::vector<int64_t> filter, std::string padding, int64_t stride_h,
              int64_t stride_w);
// The same problem with NCHW activations (strides, dilations and explicit pads permuted).
TfConv2D as_nchw(TfConv2D c);

// Where run_problem runs a call (RunOptions::device), and whether its tensors live in that
// GPU's memory (uploaded through Halide's runtime, which libconvgrad carries) or the host's.
struct TestDevice {
    Device device = Device::kCpu;
    bool device_memory = false;
    Backend backend = Backend::kAuto;  // kJit: compile for the problem (tests/jit_test.cpp)
    int64_t offset = 0;  // host tensors only: each starts this many elements into its storage
};

// Runs a resolved problem on tensors holding `first` and `second` in the problem's own
// layouts (dy then w for the data gradient; x then dy for the filter gradient), with a
// NaN-poisoned result; optionally every tensor gapped (non-contiguous).
struct RunResult {
    Status status;
    std::vector<double> result;
    std::string kernel;
};
RunResult run_problem(const ConvProblem &p, Direction d, const std::vector<double> &first,
                      const std::vector<double> &second, bool gapped, const TestDevice &on = {});

// Runs `p` (run_problem's `first` and `second`) on tensors aligned as frameworks allocate them
// and on tensors one element into their storage (no vector aligned), and compares each result
// with `ref` (relative error at most `tolerance`); with `kernel`, the aligned run must take it
// on this path (kernel_on_this_path). (One run serves both checks: under qemu, where the ARM64
// tests emulate every run, a separate run for the kernel's name was a third of the time.)
void expect_matches_at_offsets(const ConvProblem &p, Direction d, const std::vector<double> &first,
                               const std::vector<double> &second, const std::vector<double> &ref, double tolerance,
                               const std::string &kernel = "");

// The problem convgrad's TF frontend resolves `c` to (Conv2D or depthwise, as `c` says).
Result<ConvProblem> tf_problem(const TfConv2D &c, bool backprop_input, DType dtype = DType::kFloat32);

// The kernel the registry would run for `p` on aligned host tensors, without running it (a
// routing check; the tests that compare numbers run the kernels).
std::string routed_kernel(const ConvProblem &p, Direction d);

// Resolves `c` through convgrad's TF frontend and runs the gradient on tensors holding
// `first` and `second` (filter and dy for backprop-input, x and dy for backprop-filter).
using TfRunResult = RunResult;
TfRunResult run_tf(const TfConv2D &c, bool backprop_input, const std::vector<double> &first,
                   const std::vector<double> &second, bool gapped);

}  // namespace convgrad::test
