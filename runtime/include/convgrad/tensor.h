// Tensors as the caller owns them: a pointer, a dtype, a shape in the op's own dimension order
// and strides in elements (any strides: views, not copies). Like DLPack's DLTensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convgrad {

enum class DType { kFloat16, kBFloat16, kFloat32, kFloat64, kInt32 };

// Where a tensor's memory lives, and where a call runs (RunOptions::device).
//   kCpu:    host memory; `data` is a pointer.
//   kCuda:   CUDA device memory; `data` is the CUdeviceptr (offsets into an allocation are fine).
//   kOpenCL: an OpenCL buffer; `data` is the cl_mem, and the tensor starts at its beginning.
//   kAuto:   RunOptions only: the device of the device-resident tensors if any, else a CUDA
//            GPU if there is one, else the CPU.
enum class Device { kCpu, kCuda, kOpenCL, kAuto };
const char *device_name(Device d);              // "cpu", "cuda", "opencl", "auto"
bool parse_device(const std::string &name, Device *out);

using Shape = std::vector<int64_t>;

const char *dtype_name(DType t);                 // "float32", "bfloat16", ...
bool parse_dtype(const std::string &name, DType *out);
int dtype_size(DType t);                         // bytes per element

struct Tensor {
    void *data = nullptr;
    DType dtype = DType::kFloat32;
    Shape shape;
    Shape strides;  // in elements; empty means C-contiguous (row-major) for `shape`
    Device device = Device::kCpu;  // where `data` lives (never kAuto)

    Shape effective_strides() const;
    int64_t num_elements() const;
};

Shape contiguous_strides(const Shape &shape);
int64_t num_elements(const Shape &shape);
std::string shape_string(const Shape &shape);    // "[2, 5, 5, 3]"

}  // namespace convgrad
