// GPU memory through convgrad's own Halide runtime, for callers with no CUDA or OpenCL code
// of their own (tests, benchmarks, small apps): allocate, copy in, pass handle() as a
// Tensor's data with its device, copy out. Frameworks pass their own device pointers instead.
#pragma once

#include <cstddef>
#include <memory>

#include "status.h"
#include "tensor.h"

namespace convgrad {

class DeviceMemory {
public:
    // `bytes` of memory on the device kernels use (HL_GPU_DEVICE, default 0) of `api`.
    static Result<std::unique_ptr<DeviceMemory>> allocate(Device api, size_t bytes);
    ~DeviceMemory();
    DeviceMemory(const DeviceMemory &) = delete;
    DeviceMemory &operator=(const DeviceMemory &) = delete;

    Status upload(const void *host);  // bytes() bytes from host memory
    Status download(void *host);      // bytes() bytes to host memory
    void *handle() const;             // CUDA: the CUdeviceptr; OpenCL: the cl_mem
    size_t bytes() const;
    Device api() const;

    struct Impl;

private:
    explicit DeviceMemory(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace convgrad
