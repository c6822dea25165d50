// Pieces shared by the two backprop generators: dtype and layout generator params, the
// per-axis convolution parameters, and the storage/accumulator types.
#pragma once

#include <array>
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

// 16-bit floats accumulate in float32 and round once at the end (round-to-nearest-even);
// float32/float64 in their own type. int32 accumulates in uint32: Halide treats signed
// overflow as undefined, unsigned arithmetic wraps, and the same bits are TF's wrapped int32.
inline Type accumulator_type(const Type &storage) {
    if (storage.is_bfloat() || (storage.is_float() && storage.bits() < 32)) return Float(32);
    if (storage.is_int()) return UInt(storage.bits());
    return storage;
}

// Which activation dimension is contiguous in this variant. The kernel asserts it (so the
// registry must only route matching views here) and the schedule vectorises along it.
// NXG: the group dim is contiguous, i.e. one channel per group in NXC (depthwise).
// NCG: x contiguous (NCX) with one channel per group: depthwise in channels-first layouts.
enum class Layout { NXC, NCX, NXG, NCG, Any };

inline bool one_channel_per_group(Layout l) { return l == Layout::NXG || l == Layout::NCG; }
inline bool rows_contiguous(Layout l) { return l == Layout::NCX || l == Layout::NCG; }  // channels first

inline Layout parse_layout(const std::string &s) {
    if (s == "nxc") return Layout::NXC;
    if (s == "ncx") return Layout::NCX;
    if (s == "nxg") return Layout::NXG;
    if (s == "ncg") return Layout::NCG;
    if (s == "any") return Layout::Any;
    throw std::invalid_argument("convgrad: unknown layout generator param '" + s + "'");
}

// Halide assumes dim(0) has unit stride unless told otherwise; canonical views may have any.
// `dims`: 6, or 7 for the x-phase view (canonical.h); c is dim 0, x (or q) dim 1, and the
// group and batch dims are the last two either way.
template<typename BufferLike>
void constrain_activation_strides(BufferLike &b, Layout layout, int dims = canonical::kActDims) {
    for (int d = 0; d < dims; d++) {
        b.dim(d).set_stride(Expr());
        b.dim(d).set_min(0);
    }
    if (layout == Layout::NXC) b.dim(canonical::kC).set_stride(1);
    if (rows_contiguous(layout)) b.dim(canonical::kX).set_stride(1);
    if (layout == Layout::NXG) b.dim(dims - 2).set_stride(1);
    // One channel per group: telling Halide the channel extent is 1 removes the channel
    // loops, so the tiles' accumulators stay in registers.
    if (one_channel_per_group(layout)) b.dim(canonical::kC).set_bounds(0, 1);
}

template<typename BufferLike>
void constrain_filter_strides(BufferLike &b, Layout layout) {
    for (int d = 0; d < canonical::kFilterDims; d++) {
        b.dim(d).set_stride(Expr());
        b.dim(d).set_min(0);
    }
    if (one_channel_per_group(layout)) {  // depthwise, multiplier 1: one input, one output channel
        b.dim(canonical::kCi).set_bounds(0, 1);
        b.dim(canonical::kCo).set_bounds(0, 1);
    }
}

// Vector registers of the target's widest ISA: CPU schedules size their register tiles by it.
// AVX-512: 32 zmm; AVX2/SSE: 16; ARM64 NEON: 32 (128-bit) registers.
inline int vector_registers(const Target &t) {
    return t.has_feature(Target::AVX512) || (t.arch == Target::ARM && t.bits == 64) ? 32 : 16;
}

// Per spatial axis (x, y, z) runtime parameters: stride, dilation and padding before.
// The padding after is implied by the buffer extents, so kernels never need it.
struct AxisParams {
    Expr stride, dilation, pad_begin;
};

// What both backprop generators take: the build-time dtype and layout, and the per-axis
// runtime parameters (so every kernel has the same scalar signature, which the runtime's
// registry relies on). Inputs declared here come first in the generated signature.
template<typename T>
class ConvGradGenerator : public Generator<T> {
public:
    GeneratorParam<std::string> dtype{"dtype", "float32"};
    GeneratorParam<std::string> layout{"layout", "nxc"};

    // Validated by the runtime (>= 1); kernels only see canonical, checked values.
    GeneratorInput<int32_t> stride_x{"stride_x", 1}, stride_y{"stride_y", 1}, stride_z{"stride_z", 1};
    GeneratorInput<int32_t> dilation_x{"dilation_x", 1}, dilation_y{"dilation_y", 1}, dilation_z{"dilation_z", 1};
    GeneratorInput<int32_t> pad_x{"pad_x", 0}, pad_y{"pad_y", 0}, pad_z{"pad_z", 0};

protected:
    Type storage() const { return storage_type(dtype); }
    Type accumulator() const { return accumulator_type(storage()); }

    // GPU targets keep bfloat16 tensors as their 16 bits (uint16) and convert explicitly:
    // LLVM 14's NVPTX backend crashes on bfloat16 arithmetic with cuda_capability_80
    // (shared/docs/halide14.md), and OpenCL C has no bfloat16 type. The runtime passes such
    // kernels uint16 buffers over the same memory.
    bool bf16_as_bits() const { return storage().is_bfloat() && this->get_target().has_gpu_feature(); }
    // The element type of the kernel's buffers.
    Type buffer_type() const { return bf16_as_bits() ? UInt(16) : storage(); }
    // A buffer element in the accumulator type.
    Expr widen(const Expr &v) const {
        // bfloat16 is the high half of a float32.
        if (bf16_as_bits()) return reinterpret(Float(32), Halide::cast(UInt(32), v) << 16);
        return Halide::cast(accumulator(), v);
    }
    // An accumulator value as a buffer element.
    Expr narrow(const Expr &a) const {
        if (!bf16_as_bits()) return Halide::cast(storage(), a);
        // Round to nearest, ties to even (as Halide's own float32 -> bfloat16 cast); NaNs
        // stay NaNs (quiet bit set) instead of rounding into infinity.
        const Expr bits = reinterpret(UInt(32), a);
        const Expr rounded = (bits + (0x7FFF + ((bits >> 16) & 1))) >> 16;
        const Expr nan = (bits & 0x7FFFFFFF) > 0x7F800000;
        return Halide::cast(UInt(16), select(nan, (bits >> 16) | 0x40, rounded));
    }
    Layout variant_layout() const { return parse_layout(layout); }

    // Axes in canonical order x, y, z.
    std::array<AxisParams, 3> axes() const {
        return {AxisParams{stride_x, dilation_x, pad_x}, AxisParams{stride_y, dilation_y, pad_y},
                AxisParams{stride_z, dilation_z, pad_z}};
    }
    Expr unit_stride() const { return stride_x == 1 && stride_y == 1 && stride_z == 1; }
};

}  // namespace convgrad::gen
