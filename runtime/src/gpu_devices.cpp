#include "gpu_devices.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace convgrad {
namespace {

// Versioned names first: the unversioned libcuda.so / libOpenCL.so (all Halide's own
// runtime tries) come with development packages only, so a plain driver install would look
// like no driver at all.
void *load_first(std::initializer_list<const char *> names) {
    for (const char *n : names) {
        if (void *h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
    }
    return nullptr;
}

void *cuda_library() {
    static void *lib = load_first({"libcuda.so.1", "libcuda.so"});
    return lib;
}

void *opencl_library() {
    static void *lib = load_first({"libOpenCL.so.1", "libOpenCL.so"});
    return lib;
}

template<typename Fn>
Fn symbol(void *lib, const char *name) {
    return lib == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(lib, name));
}

// --- CUDA driver API (the few calls needed, declared here: no CUDA headers needed) ---
constexpr int kCapabilityMajor = 75, kCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*

void probe_cuda(std::vector<DeviceInfo> &out) {
    void *lib = cuda_library();
    auto init = symbol<int (*)(unsigned)>(lib, "cuInit");
    auto count = symbol<int (*)(int *)>(lib, "cuDeviceGetCount");
    auto get = symbol<int (*)(int *, int)>(lib, "cuDeviceGet");
    auto name = symbol<int (*)(char *, int, int)>(lib, "cuDeviceGetName");
    auto attribute = symbol<int (*)(int *, int, int)>(lib, "cuDeviceGetAttribute");
    int n = 0;
    if (!init || !count || !get || !name || !attribute || init(0) != 0 || count(&n) != 0) return;
    for (int i = 0; i < n; i++) {
        int dev = 0, major = 0, minor = 0;
        char buf[256] = {0};
        if (get(&dev, i) != 0) continue;
        name(buf, sizeof buf - 1, dev);
        attribute(&major, kCapabilityMajor, dev);
        attribute(&minor, kCapabilityMinor, dev);
        out.push_back({Device::kCuda, i, buf, "sm_" + std::to_string(major * 10 + minor), major * 10 + minor});
    }
}

// --- OpenCL (ICD loader) ---
constexpr unsigned long kDeviceTypeAll = 0xFFFFFFFF;
constexpr unsigned kDeviceType = 0x1000, kDeviceName = 0x102B, kDeviceExtensions = 0x1030;
constexpr unsigned long kTypeCpu = 1 << 1, kTypeGpu = 1 << 2;

void probe_opencl(std::vector<DeviceInfo> &out) {
    void *lib = opencl_library();
    using Id = void *;
    auto platforms = symbol<int (*)(unsigned, Id *, unsigned *)>(lib, "clGetPlatformIDs");
    auto devices = symbol<int (*)(Id, unsigned long, unsigned, Id *, unsigned *)>(lib, "clGetDeviceIDs");
    auto info = symbol<int (*)(Id, unsigned, size_t, void *, size_t *)>(lib, "clGetDeviceInfo");
    if (!platforms || !devices || !info) return;
    Id ps[16];
    unsigned np = 0;
    if (platforms(16, ps, &np) != 0) return;
    int index = 0;
    for (unsigned p = 0; p < np && p < 16; p++) {
        Id ds[16];
        unsigned nd = 0;
        if (devices(ps[p], kDeviceTypeAll, 16, ds, &nd) != 0) continue;
        for (unsigned d = 0; d < nd && d < 16; d++) {
            char name[256] = {0};
            unsigned long type = 0;
            size_t ext_size = 0;
            info(ds[d], kDeviceName, sizeof name - 1, name, nullptr);
            info(ds[d], kDeviceType, sizeof type, &type, nullptr);
            info(ds[d], kDeviceExtensions, 0, nullptr, &ext_size);
            std::string ext(ext_size, '\0');
            if (ext_size > 0) info(ds[d], kDeviceExtensions, ext_size, ext.data(), nullptr);
            std::string detail = (type & kTypeGpu) ? "gpu" : (type & kTypeCpu) ? "cpu" : "other";
            detail += ext.find("cl_khr_fp64") != std::string::npos ? ", fp64" : ", no fp64";
            detail += ext.find("cl_khr_fp16") != std::string::npos ? ", fp16" : ", no fp16";
            out.push_back({Device::kOpenCL, index++, name, detail, 0});
        }
    }
}

}  // namespace

const std::vector<DeviceInfo> &gpu_devices() {
    static const std::vector<DeviceInfo> all = [] {
        std::vector<DeviceInfo> out;
        probe_cuda(out);
        probe_opencl(out);
        return out;
    }();
    return all;
}

int gpu_device_index() {
    const char *env = std::getenv("HL_GPU_DEVICE");
    return env != nullptr ? std::atoi(env) : 0;
}

int cuda_capability() {
    const int want = gpu_device_index();
    for (const DeviceInfo &d : gpu_devices()) {
        if (d.api == Device::kCuda && d.index == want) return d.capability;
    }
    return 0;
}

bool device_available(Device api, std::string *why) {
    for (const DeviceInfo &d : gpu_devices()) {
        if (d.api == api) return true;
    }
    if (why != nullptr) {
        const bool cuda = api == Device::kCuda;
        const bool loaded = (cuda ? cuda_library() : opencl_library()) != nullptr;
        *why = loaded ? std::string(cuda ? "the CUDA driver reports no device" : "no OpenCL platform reports a device")
                      : std::string(cuda ? "no CUDA driver (libcuda.so.1) on this machine"
                                         : "no OpenCL ICD loader (libOpenCL.so.1) on this machine");
    }
    return false;
}

std::vector<DeviceInfo> devices() {
    std::vector<DeviceInfo> out = {{Device::kCpu, 0, "host CPU", expected_isa_path(), 0}};
    for (const DeviceInfo &d : gpu_devices()) out.push_back(d);
    return out;
}

}  // namespace convgrad

// Halide's GPU runtimes find driver functions through these hooks (weak in the runtime);
// these use the libraries loaded above, with their versioned names.
extern "C" void *halide_cuda_get_symbol(void *, const char *name) {
    return convgrad::symbol<void *>(convgrad::cuda_library(), name);
}
extern "C" void *halide_opencl_get_symbol(void *, const char *name) {
    return convgrad::symbol<void *>(convgrad::opencl_library(), name);
}
