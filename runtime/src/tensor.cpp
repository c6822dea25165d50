#include "convgrad/tensor.h"

#include <sstream>

namespace convgrad {

const char *dtype_name(DType t) {
    switch (t) {
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt32: return "int32";
    }
    return "?";
}

bool parse_dtype(const std::string &name, DType *out) {
    for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kInt32}) {
        if (name == dtype_name(t)) {
            *out = t;
            return true;
        }
    }
    return false;
}

const char *device_name(Device d) {
    switch (d) {
    case Device::kCpu: return "cpu";
    case Device::kCuda: return "cuda";
    case Device::kOpenCL: return "opencl";
    case Device::kAuto: return "auto";
    }
    return "?";
}

bool parse_device(const std::string &name, Device *out) {
    for (Device d : {Device::kCpu, Device::kCuda, Device::kOpenCL, Device::kAuto}) {
        if (name == device_name(d)) {
            *out = d;
            return true;
        }
    }
    return false;
}

int dtype_size(DType t) {
    switch (t) {
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kFloat64: return 8;
    }
    return 0;
}

Shape contiguous_strides(const Shape &shape) {
    Shape strides(shape.size());
    int64_t s = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
    return strides;
}

int64_t num_elements(const Shape &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shape_string(const Shape &shape) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < shape.size(); i++) os << (i ? ", " : "") << shape[i];
    os << "]";
    return os.str();
}

Shape Tensor::effective_strides() const { return strides.empty() ? contiguous_strides(shape) : strides; }
int64_t Tensor::num_elements() const { return convgrad::num_elements(shape); }

}  // namespace convgrad
