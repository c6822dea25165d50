// convgrad: convolution gradients compiled ahead of time with Halide.
//
//   1. Resolve a frontend's attributes into a ConvProblem (convgrad/tf.h, ...), or fill one in.
//   2. Allocate the result with input_shape() / filter_shape().
//   3. Call backward_data() or backward_weights().
// Errors come back as a Status; bad input never crashes.
#pragma once

#include <string>
#include <vector>

#include "device_memory.h"
#include "problem.h"
#include "status.h"
#include "tensor.h"

namespace convgrad {

enum class Backend { kAuto, kAot, kJit };

struct RunOptions {
    // Where the call runs (convgrad/tensor.h). A GPU call takes tensors in host memory
    // (copied to the device and the result back, per call) or on that device (no copies);
    // the CPU takes host tensors only. Without a usable driver or device, a GPU call returns
    // kUnsupported and kAuto runs on the CPU.
    Device device = Device::kCpu;
    Backend backend = Backend::kAuto;
};

// dx = dL/dx from dy = dL/dy and the filter w. dx must have input_shape(p).
Status backward_data(const ConvProblem &p, const Tensor &dy, const Tensor &w, const Tensor &dx,
                     const RunOptions &options = {});

// dw = dL/dw from the forward input x and dy. dw must have filter_shape(p).
Status backward_weights(const ConvProblem &p, const Tensor &x, const Tensor &dy, const Tensor &dw,
                        const RunOptions &options = {});

// The name of the kernel backward_data/backward_weights would run for these tensors.
enum class Direction { kBackwardData, kBackwardWeights };
Result<std::string> select_kernel(Direction direction, const ConvProblem &p, const Tensor &a,
                                  const Tensor &b, const Tensor &result, const RunOptions &options = {});

// The shapes of a direction's tensors in the problem's layouts, as select_kernel takes them:
// (dy, w, dx) for the data gradient, (x, dy, dw) for the filter gradient.
struct OperandShapes {
    Shape a, b, result;
};
OperandShapes operand_shapes(Direction direction, const ConvProblem &p);

// Threads the CPU kernels use, the caller's included (runtime/src/thread_pool.h); 0: the
// default, HL_NUM_THREADS, else the CPUs the process may run on. Idle workers spin
// CONVGRAD_SPIN_US microseconds (default 1000) before they sleep.
void set_num_threads(int threads);

// --- Introspection (convgrad info) ---
struct KernelInfo {
    std::string name;       // e.g. "bwd_data_f32_nxc"
    Direction direction;
    DType dtype;
    std::string layout;     // "nxc", "ncx", ... or "any"
    Device device;          // kCpu, kCuda or kOpenCL
    bool from_avx2;         // x86: a refinement without an SSE4.1 body, skipped by CPUs without AVX2
};
std::vector<KernelInfo> registered_kernels();   // in dispatch order

struct DeviceInfo {
    Device api;             // kCpu, kCuda or kOpenCL
    int index;              // the driver's device number
    std::string name;       // e.g. "NVIDIA H100 80GB HBM3", "pthread-skylake-avx512-..."
    std::string detail;     // CUDA: "sm_90"; OpenCL: "gpu, fp64, no fp16"; CPU: its ISA path
    int capability;         // CUDA compute capability (major * 10 + minor), else 0
};
std::vector<DeviceInfo> devices();              // the CPU, then what the GPU drivers report
bool gpu_kernels_built(Device api);             // whether this build has kernels for api

std::vector<std::string> host_cpu_features();   // e.g. {"sse41", "avx2", "fma", "avx512f", ...}
std::string host_cpu_vendor();                  // CPUID's, e.g. "GenuineIntel" ("" off x86): some registry rules depend on it
int host_cpu_family();                          // CPUID's display family (AMD Zen 4: 25, Zen 5: 26; 0 off x86)
std::string expected_isa_path();                // the multitarget path this CPU should take
std::string last_isa_path();                    // the path the last kernel call actually took ("" if none yet)

}  // namespace convgrad
