// Pieces shared by the two backprop generators: dtype and layout generator params, the
// per-axis convolution parameters, and the storage/accumulator types.
#pragma once

#include <stdexcept>
#include <string>

#include "Halide.h"
#include "canonical.h"

namespace convgrad::gen {

using namespace Halide;

// Element type of the tensors, chosen at build time per variant (HelloPyTorch style).
// Halide 14 has no "bfloat16" generator type name, hence a string param and BFloat(16).
inline Type storage_type(const std::string &dtype) {
    if (dtype == "float32") return Float(32);
    if (dtype == "float64") return Float(64);
    if (dtype == "float16") return Float(16);
    if (dtype == "bfloat16") return BFloat(16);
    if (dtype == "int32") return Int(32);
    throw std::invalid_argument("convgrad: unknown dtype generator param '" + dtype + "'");
}

// 16-bit floats accumulate in float32 and round once at the end; others in their own type.
inline Type accumulator_type(const Type &storage) {
    return (storage.is_float() && storage.bits() < 32) || storage.is_bfloat() ? Float(32) : storage;
}

// Which activation dimension is contiguous in this variant. The kernel asserts it (so the
// registry must only route matching views here) and the schedule vectorises along it.
enum class Layout { NXC, NCX, Any };

inline Layout parse_layout(const std::string &s) {
    if (s == "nxc") return Layout::NXC;
    if (s == "ncx") return Layout::NCX;
    if (s == "any") return Layout::Any;
    throw std::invalid_argument("convgrad: unknown layout generator param '" + s + "'");
}

// Halide assumes dim(0) has unit stride unless told otherwise; canonical views may have any.
template<typename BufferLike>
void constrain_activation_strides(BufferLike &b, Layout layout) {
    for (int d = 0; d < canonical::kActDims; d++) {
        b.dim(d).set_stride(Expr());
        b.dim(d).set_min(0);
    }
    if (layout == Layout::NXC) b.dim(canonical::kC).set_stride(1);
    if (layout == Layout::NCX) b.dim(canonical::kX).set_stride(1);
}

template<typename BufferLike>
void constrain_filter_strides(BufferLike &b) {
    for (int d = 0; d < canonical::kFilterDims; d++) {
        b.dim(d).set_stride(Expr());
        b.dim(d).set_min(0);
    }
}

// Per spatial axis (x, y, z) runtime parameters: stride, dilation and padding before.
// The padding after is implied by the buffer extents, so kernels never need it.
struct AxisParams {
    Expr stride, dilation, pad_begin;
};

}  // namespace convgrad::gen
