// convgrad info: kernels built in, host CPU features, which multitarget ISA path runs, and
// the GPU devices the drivers report.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "commands.h"
#include "convgrad/convgrad.h"

namespace convgrad::cli {
namespace {

// Runs one tiny kernel so Halide's multitarget wrapper picks (and we record) its path.
std::string probe_isa_path() {
    ConvProblem p;
    p.input_size = p.output_size = {2, 2, 1};
    std::vector<float> dy(4, 1.0f), w(1, 1.0f), dx(4);
    Tensor tdy{dy.data(), DType::kFloat32, output_shape(p), {}};
    Tensor tw{w.data(), DType::kFloat32, filter_shape(p), {}};
    Tensor tdx{dx.data(), DType::kFloat32, input_shape(p), {}};
    Status s = backward_data(p, tdy, tw, tdx);
    return s ? last_isa_path() : "error: " + s.message();
}

}  // namespace

int info_command(int argc, char **) {
    if (argc > 0) return report_invalid("info: takes no arguments");
    std::printf("convgrad %s\n", CONVGRAD_VERSION);
    // (Some registry rules differ by vendor, and on AMD by family: runtime/src/kernel_registry.h.)
    std::printf("host CPU vendor: %s\n", host_cpu_vendor().empty() ? "(not x86)" : host_cpu_vendor().c_str());
    std::printf("host CPU family: %d\n", host_cpu_family());
    std::printf("host CPU features:");
    for (const auto &f : host_cpu_features()) std::printf(" %s", f.c_str());
    const char *cap = std::getenv("CONVGRAD_MAX_CPU_ISA");
    if (cap && *cap == '\0') cap = nullptr;
    std::printf("\nx86 multitarget path: %s (expected from CPUID: %s%s%s)\n", probe_isa_path().c_str(),
                expected_isa_path().c_str(), cap ? ", at most CONVGRAD_MAX_CPU_ISA=" : "", cap ? cap : "");
    std::printf("GPU kernels built: cuda %s, opencl %s\n", gpu_kernels_built(Device::kCuda) ? "yes" : "no",
                gpu_kernels_built(Device::kOpenCL) ? "yes" : "no");
    std::printf("devices:\n");
    for (const DeviceInfo &d : devices()) {
        std::printf("  %-6s %d  %s (%s)\n", device_name(d.api), d.index, d.name.c_str(), d.detail.c_str());
    }
    std::printf("kernels, in dispatch order:\n");
    for (const auto &k : registered_kernels()) {
        std::printf("  %-24s %-16s %-8s %-6s %s%s\n", k.name.c_str(),
                    k.direction == Direction::kBackwardData ? "backward_data" : "backward_weights",
                    dtype_name(k.dtype), device_name(k.device), k.layout.c_str(), k.from_avx2 ? "  (from AVX2)" : "");
    }
    return 0;
}

}  // namespace convgrad::cli
