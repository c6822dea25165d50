#include "convgrad/device_memory.h"

#include <string>

#include "gpu_devices.h"
#include "halide_bridge.h"
#ifdef CONVGRAD_HAVE_GPU
#include "HalideRuntimeCuda.h"
#include "HalideRuntimeOpenCL.h"
#endif

namespace convgrad {

// A 1-D byte buffer that only ever holds a device allocation; the host pointer is set just
// for the length of a copy.
struct DeviceMemory::Impl {
    Device api = Device::kCpu;
    halide_dimension_t dim{};
    halide_buffer_t buf{};
};

DeviceMemory::DeviceMemory(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<DeviceMemory>> DeviceMemory::allocate(Device api, size_t bytes) {
    const std::string what = std::string("device memory (") + device_name(api) + ")";
    if (api != Device::kCuda && api != Device::kOpenCL) return Status::invalid(what + ": not a GPU api");
    if (!gpu_kernels_built(api)) return Status::unsupported(what + ": GPU support is not built in");
    std::string why;
    if (!device_available(api, &why)) return Status::unsupported(what + ": " + why);
    if (bytes == 0 || bytes > INT32_MAX) return Status::invalid(what + ": size must be 1 to 2^31-1 bytes");
    auto impl = std::make_unique<Impl>();
    impl->api = api;
    impl->dim = halide_dimension_t(0, static_cast<int32_t>(bytes), 1);
    impl->buf.type = halide_type_t(halide_type_uint, 8);
    impl->buf.dimensions = 1;
    impl->buf.dim = &impl->dim;
#ifdef CONVGRAD_HAVE_GPU
    const halide_device_interface_t *iface =
        api == Device::kCuda ? halide_cuda_device_interface() : halide_opencl_device_interface();
    Status s = halide_call(what, [&](void *ctx) { return halide_device_malloc(ctx, &impl->buf, iface); });
    if (!s) return s;
#endif
    return std::unique_ptr<DeviceMemory>(new DeviceMemory(std::move(impl)));
}

DeviceMemory::~DeviceMemory() {
    halide_call("device memory free", [&](void *ctx) { return halide_device_free(ctx, &impl_->buf); });
}

Status DeviceMemory::upload(const void *host) {
    impl_->buf.host = static_cast<uint8_t *>(const_cast<void *>(host));
    impl_->buf.flags = halide_buffer_flag_host_dirty;
    Status s = halide_call("device memory upload", [&](void *ctx) {
        return halide_copy_to_device(ctx, &impl_->buf, impl_->buf.device_interface);
    });
    impl_->buf.host = nullptr, impl_->buf.flags = 0;
    return s;
}

Status DeviceMemory::download(void *host) {
    impl_->buf.host = static_cast<uint8_t *>(host);
    impl_->buf.flags = halide_buffer_flag_device_dirty;
    Status s = halide_call("device memory download", [&](void *ctx) { return halide_copy_to_host(ctx, &impl_->buf); });
    impl_->buf.host = nullptr, impl_->buf.flags = 0;
    return s;
}

void *DeviceMemory::handle() const {
#ifdef CONVGRAD_HAVE_GPU
    if (impl_->api == Device::kCuda) return reinterpret_cast<void *>(halide_cuda_get_device_ptr(nullptr, &impl_->buf));
    return reinterpret_cast<void *>(halide_opencl_get_cl_mem(nullptr, &impl_->buf));
#else
    return nullptr;
#endif
}

size_t DeviceMemory::bytes() const { return static_cast<size_t>(impl_->dim.extent); }
Device DeviceMemory::api() const { return impl_->api; }

}  // namespace convgrad
