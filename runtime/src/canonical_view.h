// A caller's tensor seen in the canonical 6-D order of generators/canonical.h: the layout
// becomes strides, the channel axis splits into (channel-in-group, group), missing spatial
// axes get extent 1. No data moves.
#pragma once

#include <cstdint>

#include "../../generators/canonical.h"
#include "convgrad/problem.h"

namespace convgrad {

enum class TensorRole { kInput, kOutput, kFilter };  // x/dx, dy, w/dw

struct CanonicalView {
    void *data = nullptr;
    DType dtype = DType::kFloat32;
    Device device = Device::kCpu;  // where `data` lives
    int64_t extent[6] = {1, 1, 1, 1, 1, 1};
    int64_t stride[6] = {0, 0, 0, 0, 0, 0};

    int64_t num_elements() const;
};

// Checks `t` against the problem (dtype, shape, strides) and builds its view. `arg` names the
// tensor in error messages; `is_result` rejects strides that would make threads overwrite
// each other.
Result<CanonicalView> make_view(const ConvProblem &p, TensorRole role, const Tensor &t, const char *arg,
                                bool is_result);

// Whether the view's spatial dims nest (y's stride is x's times x's extent, z's y's times
// y's; dims of extent 1 aside), so its positions are one run of x's stride: what the flat
// views of pointwise problems (execute.cpp) and of the flat-plane kernels need.
bool spatial_dims_nest(const CanonicalView &v);

// Whether the problem is pointwise: every kernel size 1, unit strides, no padding (each
// position maps to itself). Such problems run over flattened positions (execute.cpp), and
// the dy-broadcast kernels take them alone (kernel_table.cpp).
bool is_pointwise(const ConvProblem &p);

// Writes zeros over every element of the view (results of empty reductions).
void fill_zero(const CanonicalView &v);

}  // namespace convgrad
