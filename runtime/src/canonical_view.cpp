#include "canonical_view.h"

#include <cstring>
#include <string>

namespace convgrad {
namespace {

using namespace canonical;

}  // namespace

int64_t CanonicalView::num_elements() const {
    int64_t n = 1;
    for (int64_t e : extent) n *= e;
    return n;
}

Result<CanonicalView> make_view(const ConvProblem &p, TensorRole role, const Tensor &t, const char *arg,
                                bool is_result) {
    const std::string name(arg);
    const Shape expect = role == TensorRole::kFilter ? filter_shape(p)
                         : role == TensorRole::kInput ? input_shape(p) : output_shape(p);
    if (t.dtype != p.dtype) {
        return Status::invalid(name + ": dtype " + dtype_name(t.dtype) + " does not match the problem's " +
                               dtype_name(p.dtype));
    }
    if (t.shape != expect) {
        return Status::invalid(name + ": shape " + shape_string(t.shape) + " does not match the expected " +
                               shape_string(expect));
    }
    const Shape s = t.effective_strides();
    if (s.size() != t.shape.size()) {
        return Status::invalid(name + ": " + std::to_string(s.size()) + " strides for a " +
                               std::to_string(t.shape.size()) + "-D tensor");
    }
    if (t.data == nullptr && t.num_elements() > 0) return Status::invalid(name + ": data is null");
    if (t.device == Device::kAuto) return Status::invalid(name + ": a tensor's device must be cpu, cuda or opencl, not auto");
    for (size_t d = 0; d < s.size(); d++) {
        if (s[d] > INT32_MAX || s[d] < -INT32_MAX) {
            return Status::unsupported(name + ": stride " + std::to_string(s[d]) + " does not fit in 32 bits");
        }
        if (is_result && s[d] == 0 && t.shape[d] > 1) {
            return Status::invalid(name + ": a result tensor cannot have a zero stride on a dimension of size > 1");
        }
    }

    CanonicalView v;
    v.data = t.data;
    v.dtype = t.dtype;
    v.device = t.device;
    const int r = p.spatial_rank;
    const int64_t groups = p.groups;
    if (role == TensorRole::kFilter) {
        const int64_t co_per_group = p.out_channels / groups;
        int spatial0 = 0, i_dim = r, o_dim = r + 1;  // XIO and XGM
        if (p.filter_layout == FilterLayout::kOIX) spatial0 = 2, o_dim = 0, i_dim = 1;
        for (int a = 0; a < r; a++) {
            v.extent[kKx + spatial_index(r, a)] = t.shape[spatial0 + a];
            v.stride[kKx + spatial_index(r, a)] = s[spatial0 + a];
        }
        v.extent[kCo] = co_per_group;
        v.stride[kCo] = s[o_dim];
        v.extent[kFg] = groups;
        if (p.filter_layout == FilterLayout::kXGM) {
            // [X..., G, M]: the group is its own axis and there is one input channel per group.
            v.stride[kFg] = s[i_dim];
            v.extent[kCi] = 1;
            v.stride[kCi] = 0;
        } else {
            v.stride[kFg] = s[o_dim] * co_per_group;
            v.extent[kCi] = p.in_channels / groups;
            v.stride[kCi] = s[i_dim];
        }
        return v;
    }
    const int64_t channels = role == TensorRole::kOutput ? p.out_channels : p.in_channels;
    const bool ncx = p.activation_layout == ActivationLayout::kNCX;
    const int c_dim = ncx ? 1 : r + 1, spatial0 = ncx ? 2 : 1;
    v.extent[kN] = t.shape[0];
    v.stride[kN] = s[0];
    v.extent[kC] = channels / groups;
    v.stride[kC] = s[c_dim];
    v.extent[kG] = groups;
    v.stride[kG] = s[c_dim] * (channels / groups);
    for (int a = 0; a < r; a++) {
        v.extent[kX + spatial_index(r, a)] = t.shape[spatial0 + a];
        v.stride[kX + spatial_index(r, a)] = s[spatial0 + a];
    }
    return v;
}

bool is_pointwise(const ConvProblem &p) {
    for (int a = 0; a < p.spatial_rank; a++) {
        if (p.kernel_size[a] != 1 || p.strides[a] != 1 || p.pads_begin[a] != 0 || p.pads_end[a] != 0) return false;
    }
    return true;
}

bool spatial_dims_nest(const CanonicalView &v) {
    int64_t next = v.stride[kX] * v.extent[kX];
    for (int d : {kY, kZ}) {
        if (v.extent[d] == 1) continue;
        if (v.stride[d] != next) return false;
        next = v.stride[d] * v.extent[d];
    }
    return true;
}

void fill_zero(const CanonicalView &v) {
    if (v.num_elements() == 0) return;
    const int size = dtype_size(v.dtype);
    auto *base = static_cast<unsigned char *>(v.data);
    int64_t idx[6] = {0, 0, 0, 0, 0, 0};
    while (true) {
        int64_t offset = 0;
        for (int d = 0; d < 6; d++) offset += idx[d] * v.stride[d];
        std::memset(base + offset * size, 0, size);  // all-zero bits are 0 in every supported dtype
        int d = 0;
        while (d < 6 && ++idx[d] == v.extent[d]) idx[d++] = 0;
        if (d == 6) break;
    }
}

}  // namespace convgrad
