#include "test_util.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace convgrad::test {

std::vector<double> random_values(int64_t count, Rng &rng) {
    std::uniform_real_distribution<double> mag(0.1, 1.0);
    std::bernoulli_distribution sign(0.5);
    std::vector<double> v(count);
    for (auto &x : v) x = sign(rng) ? mag(rng) : -mag(rng);
    return v;
}

HostTensor::HostTensor(const Shape &shape, bool gapped) {
    tensor.dtype = DType::kFloat32;
    tensor.shape = shape;
    tensor.strides.assign(shape.size(), 0);
    int64_t s = gapped ? 2 : 1;  // innermost stride 2 when gapped
    for (size_t i = shape.size(); i-- > 0;) {
        tensor.strides[i] = s;
        s *= std::max<int64_t>(shape[i], 1) + (gapped ? 1 : 0);
    }
    storage.assign(static_cast<size_t>(s), 0.0f);
    tensor.data = storage.data();
}

namespace {

// Calls f(logical index, storage offset) for every element in C order.
template<typename F>
void for_each_element(const Tensor &t, F f) {
    const int64_t n = t.num_elements();
    std::vector<int64_t> idx(t.shape.size(), 0);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (size_t d = 0; d < idx.size(); d++) off += idx[d] * t.strides[d];
        f(i, off);
        for (size_t d = idx.size(); d-- > 0;) {
            if (++idx[d] < t.shape[d]) break;
            idx[d] = 0;
        }
    }
}

}  // namespace

void HostTensor::fill(const std::vector<double> &values) {
    for_each_element(tensor, [&](int64_t i, int64_t off) { storage[off] = static_cast<float>(values[i]); });
}

void HostTensor::poison() { std::fill(storage.begin(), storage.end(), std::numeric_limits<float>::quiet_NaN()); }

std::vector<double> HostTensor::values() const {
    std::vector<double> v(tensor.num_elements());
    for_each_element(tensor, [&](int64_t i, int64_t off) { v[i] = storage[off]; });
    return v;
}

double relative_error(const std::vector<double> &got, const std::vector<double> &ref) {
    if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); i++) {
        if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    if (den == 0) return std::sqrt(num);
    return std::sqrt(num / den);
}

std::string describe(const TfConv2D &c) {
    auto list = [](const std::vector<int64_t> &v) {
        std::string s;
        for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(v[i]);
        return s;
    };
    std::ostringstream os;
    os << (c.depthwise ? "depthwise " : "") << c.data_format << " input=" << list(c.input)
       << " filter=" << list(c.filter) << " out_backprop=" << list(c.out_backprop) << " strides=" << list(c.strides)
       << " dilations=" << list(c.dilations) << " padding=" << c.padding;
    if (c.padding == "EXPLICIT") os << " explicit_paddings=" << list(c.explicit_paddings);
    return os.str();
}

TfRunResult run_tf(const TfConv2D &c, bool backprop_input, const std::vector<double> &first,
                   const std::vector<double> &second, bool gapped) {
    tf::ConvAttrs attrs{c.strides, c.dilations, c.padding, c.explicit_paddings, c.data_format};
    Result<ConvProblem> p = backprop_input
        ? (c.depthwise ? tf::depthwise_conv2d_backprop_input : tf::conv2d_backprop_input)(
              attrs, c.input, c.filter, c.out_backprop, DType::kFloat32)
        : (c.depthwise ? tf::depthwise_conv2d_backprop_filter : tf::conv2d_backprop_filter)(
              attrs, c.input, c.filter, c.out_backprop, DType::kFloat32);
    if (!p.is_ok()) {
        RunResult r;
        r.status = p.status;
        return r;
    }
    // TF's data gradient takes (filter, dy); the API takes (dy, w).
    if (backprop_input) return run_problem(p.value, Direction::kBackwardData, second, first, gapped);
    return run_problem(p.value, Direction::kBackwardWeights, first, second, gapped);
}

RunResult run_problem(const ConvProblem &p, Direction d, const std::vector<double> &first,
                      const std::vector<double> &second, bool gapped) {
    const bool data = d == Direction::kBackwardData;
    HostTensor a(data ? output_shape(p) : input_shape(p), gapped);
    HostTensor b(data ? filter_shape(p) : output_shape(p), gapped);
    HostTensor out(data ? input_shape(p) : filter_shape(p), gapped);
    a.fill(first);
    b.fill(second);
    out.poison();
    RunResult r;
    auto k = select_kernel(d, p, a.tensor, b.tensor, out.tensor);
    r.kernel = k.is_ok() ? k.value : "";
    r.status = data ? backward_data(p, a.tensor, b.tensor, out.tensor) : backward_weights(p, a.tensor, b.tensor, out.tensor);
    r.result = out.values();
    return r;
}

}  // namespace convgrad::test
