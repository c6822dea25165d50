// With unit strides and dilation d along an axis, a convolution splits there into d
// undilated ones over views of every d-th position:
// - Data gradient: dx's positions of phase p (i = d*i' + p) read dy's of one phase q alone,
//   j = i + pb - k*d = d*(i' + a - k) + q with p + pb = d*a + q: dy's phase q, padded by a
//   before, into dx's phase p.
// - Filter gradient: dy's positions of phase p read x at i - pb + k*d = d*(i' + a + k) + q
//   with p - pb = d*a + q: dy's phase p against x's phase q from its a-th position on (or
//   padded by -a before, a < 0), each phase a whole dw, added.
// Each phase is a call to a kernel of dilation 1: where that is a Winograd kernel (3x3),
// ~4x fewer multiplies than the dilated direct kernel (DeepLab's dl_3x3_d2, NHWC: data
// 24.9 -> 15.1 ms; bench/RESULTS.md).
#include "dilation_phases.h"

#include <algorithm>

namespace convgrad {
namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Positions first, first + d, ... below `size`.
int64_t every(int64_t size, int64_t first, int64_t d) { return size > first ? (size - first + d - 1) / d : 0; }

// `view` from position `first` along `dim`, every d-th, `extent` of them.
void take_phase(CanonicalView &view, int dim, int64_t first, int64_t d, int64_t extent, int64_t bytes) {
    view.data = static_cast<char *>(view.data) + first * view.stride[dim] * bytes;
    view.stride[dim] *= d;
    view.extent[dim] = extent;
}

}  // namespace

std::vector<PhaseCall> dilation_phases(Direction d, const ConvProblem &p, const CallViews &v) {
    bool dilated = false;
    for (int a = 0; a < p.spatial_rank; a++) {
        if (p.strides[a] != 1) return {};
        dilated = dilated || p.dilations[a] > 1;
    }
    if (!dilated) return {};
    const bool data = d == Direction::kBackwardData;
    const int64_t bytes = dtype_size(p.dtype);
    const auto dil = [&](int a) { return a < p.spatial_rank ? p.dilations[a] : int64_t{1}; };
    std::vector<PhaseCall> out;
    int64_t phase[3] = {0, 0, 0};
    for (phase[2] = 0; phase[2] < dil(2); phase[2]++) {
        for (phase[1] = 0; phase[1] < dil(1); phase[1]++) {
            for (phase[0] = 0; phase[0] < dil(0); phase[0]++) {
                PhaseCall c{p, v};
                bool empty = false;
                for (int a = 0; a < p.spatial_rank; a++) {
                    const int64_t da = p.dilations[a], ph = phase[a];
                    const int dim = canonical::kX + canonical::spatial_index(p.spatial_rank, a);
                    const int64_t t = data ? ph + p.pads_begin[a] : ph - p.pads_begin[a];
                    const int64_t shift = floor_div(t, da), q = t - shift * da;
                    int64_t in, out_size, pad;
                    if (data) {  // dx's phase ph, dy's phase q
                        in = every(p.input_size[a], ph, da);
                        out_size = every(p.output_size[a], q, da);
                        pad = shift;
                        take_phase(c.views.result, dim, ph, da, in, bytes);
                        take_phase(c.views.a, dim, q, da, out_size, bytes);
                    } else {  // dy's phase ph, x's phase q from its max(shift, 0)-th position
                        const int64_t first = q + std::max<int64_t>(shift, 0) * da;
                        in = every(p.input_size[a], first, da);
                        out_size = every(p.output_size[a], ph, da);
                        pad = std::max<int64_t>(-shift, 0);
                        take_phase(c.views.a, dim, first, da, in, bytes);
                        take_phase(c.views.b, dim, ph, da, out_size, bytes);
                    }
                    empty = empty || in == 0 || (!data && out_size == 0);
                    c.problem.input_size[a] = in;
                    c.problem.output_size[a] = out_size;
                    c.problem.dilations[a] = 1;
                    c.problem.pads_begin[a] = pad;
                    c.problem.pads_end[a] = out_size - in - pad + p.kernel_size[a] - 1;
                }
                if (!empty) out.push_back(c);
            }
        }
    }
    return out;
}

namespace {

// Along result's densest dim innermost (parts from like_compact share its order).
template<typename T>
void add_typed(const CanonicalView &result, const std::vector<CanonicalView> &parts) {
    int inner = 0;
    for (int dim = 1; dim < 6; dim++) {
        if (result.extent[dim] > 1 && (result.extent[inner] == 1 || result.stride[dim] < result.stride[inner])) inner = dim;
    }
    int64_t idx[6] = {0, 0, 0, 0, 0, 0};
    while (true) {
        const auto offset = [&](const CanonicalView &view) {
            int64_t o = 0;
            for (int dim = 0; dim < 6; dim++) o += idx[dim] * view.stride[dim];
            return o;
        };
        T *r = static_cast<T *>(result.data) + offset(result);
        for (const CanonicalView &part : parts) {
            const T *s = static_cast<const T *>(part.data) + offset(part);
            for (int64_t i = 0; i < result.extent[inner]; i++) r[i * result.stride[inner]] += s[i * part.stride[inner]];
        }
        int dim = 0;
        while (dim < 6 && (dim == inner || ++idx[dim] == result.extent[dim])) {
            if (dim != inner) idx[dim] = 0;
            dim++;
        }
        if (dim == 6) break;
    }
}

}  // namespace

CanonicalView like_compact(const CanonicalView &v, void *data) {
    CanonicalView out = v;
    out.data = data;
    int order[6] = {0, 1, 2, 3, 4, 5};
    std::stable_sort(order, order + 6, [&](int x, int y) { return v.stride[x] < v.stride[y]; });
    int64_t next = 1;
    for (int dim : order) {
        out.stride[dim] = next;
        next *= v.extent[dim];
    }
    return out;
}

void add_into(const CanonicalView &result, const std::vector<CanonicalView> &parts) {
    if (result.num_elements() == 0 || parts.empty()) return;
    if (result.dtype == DType::kFloat64) {
        add_typed<double>(result, parts);
    } else {
        add_typed<float>(result, parts);
    }
}

}  // namespace convgrad
