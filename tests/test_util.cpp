#include "test_util.h"

#include <algorithm>

#include "halide_bridge.h"
#include "kernel_registry.h"
#include "kernel_variant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <limits>
#include <sstream>

namespace convgrad::test {

std::vector<double> random_values(int64_t count, Rng &rng) {
    // One draw per value: the top bit its sign, the low 53 bits its magnitude in [0.1, 1).
    // (std's distributions took two draws and were a tenth of the tests' time.)
    std::vector<double> v(count);
    for (auto &x : v) {
        const uint64_t bits = rng();
        const double magnitude = 0.1 + 0.9 * 0x1p-53 * static_cast<double>(bits & ((uint64_t{1} << 53) - 1));
        x = std::copysign(magnitude, static_cast<double>(static_cast<int64_t>(bits)));  // no branch to mispredict
    }
    return v;
}

double round_to(DType t, double v) {
    unsigned char bytes[8];
    store(t, bytes, v);
    return load(t, bytes);
}

// The compiler's IEEE half: _Float16 on x86-64; g++ for AArch64 (12) spells it __fp16. Both
// convert from double in one correctly rounded step.
#if defined(__aarch64__)
using half_t = __fp16;
#else
using half_t = _Float16;
#endif

void store(DType t, void *p, double v) {
    switch (t) {
    case DType::kFloat16: {
        const half_t h = static_cast<half_t>(v);
        std::memcpy(p, &h, 2);
        return;
    }
    case DType::kBFloat16: {
        const float f = static_cast<float>(v);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        const uint16_t b = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // RNE
        std::memcpy(p, &b, 2);
        return;
    }
    case DType::kFloat32: {
        const float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        return;
    }
    case DType::kFloat64: std::memcpy(p, &v, 8); return;
    case DType::kInt32: {
        const uint32_t u = static_cast<uint32_t>(static_cast<int64_t>(v));  // modulo 2^32
        std::memcpy(p, &u, 4);
        return;
    }
    }
}

double load(DType t, const void *p) {
    switch (t) {
    case DType::kFloat16: {
        half_t h;
        std::memcpy(&h, p, 2);
        return static_cast<double>(h);
    }
    case DType::kBFloat16: {
        uint16_t b;
        std::memcpy(&b, p, 2);
        const uint32_t bits = uint32_t(b) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    case DType::kFloat32: {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    case DType::kFloat64: {
        double d;
        std::memcpy(&d, p, 8);
        return d;
    }
    case DType::kInt32: {
        int32_t i;
        std::memcpy(&i, p, 4);
        return i;
    }
    }
    return 0;
}

double unit_roundoff(DType t) {
    switch (t) {
    case DType::kFloat16: return std::ldexp(1.0, -11);
    case DType::kBFloat16: return std::ldexp(1.0, -8);
    case DType::kFloat32: return std::ldexp(1.0, -24);
    case DType::kFloat64: return std::ldexp(1.0, -53);
    case DType::kInt32: return 0;
    }
    return 0;
}

HostTensor::HostTensor(const Shape &shape, bool gapped, DType dtype, int64_t offset) : offset(offset) {
    tensor.dtype = dtype;
    tensor.shape = shape;
    tensor.strides.assign(shape.size(), 0);
    int64_t s = gapped ? 2 : 1;  // innermost stride 2 when gapped
    for (size_t i = shape.size(); i-- > 0;) {
        tensor.strides[i] = s;
        s *= std::max<int64_t>(shape[i], 1) + (gapped ? 1 : 0);
    }
    storage.assign(static_cast<size_t>(s + offset) * dtype_size(dtype), 0);
    tensor.data = storage.data() + offset * dtype_size(dtype);
}

namespace {

// Calls f(logical index, storage offset in elements) for every element in C order.
template<typename F>
void for_each_element(const Tensor &t, F f) {
    const int64_t n = t.num_elements();
    std::vector<int64_t> idx(t.shape.size(), 0);
    int64_t off = 0;  // sum of idx[d] * strides[d], kept as idx advances
    for (int64_t i = 0; i < n; i++) {
        f(i, off);
        for (size_t d = idx.size(); d-- > 0;) {
            off += t.strides[d];
            if (++idx[d] < t.shape[d]) break;
            off -= t.shape[d] * t.strides[d];
            idx[d] = 0;
        }
    }
}

}  // namespace

void HostTensor::fill(const std::vector<double> &values) {
    const int size = dtype_size(tensor.dtype);
    for_each_element(tensor, [&](int64_t i, int64_t off) { store(tensor.dtype, &storage[(offset + off) * size], values[i]); });
}

void HostTensor::poison() {
    const int size = dtype_size(tensor.dtype);
    const double poison = tensor.dtype == DType::kInt32 ? 0x7eadbeef : std::numeric_limits<double>::quiet_NaN();
    for (size_t off = 0; off < storage.size(); off += size) store(tensor.dtype, &storage[off], poison);
}

std::vector<double> HostTensor::values() const {
    std::vector<double> v(tensor.num_elements());
    const int size = dtype_size(tensor.dtype);
    for_each_element(tensor, [&](int64_t i, int64_t off) { v[i] = load(tensor.dtype, &storage[(offset + off) * size]); });
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

TfConv2D conv(std::vector<int64_t> input, std::vector<int64_t> filter, std::string padding, int64_t stride_h,
              int64_t stride_w) {
    TfConv2D c;
    c.input = std::move(input);
    c.filter = std::move(filter);
    c.padding = std::move(padding);
    c.strides = {1, stride_h, stride_w, 1};
    return c;
}

TfConv2D as_nchw(TfConv2D c) {
    c.data_format = "NCHW";
    c.input = {c.input[0], c.input[3], c.input[1], c.input[2]};
    c.strides = {1, 1, c.strides[1], c.strides[2]};
    c.dilations = {1, 1, c.dilations[1], c.dilations[2]};
    if (c.explicit_paddings.size() == 8) {  // (before, after) per dim: N, H, W, C -> N, C, H, W
        const std::vector<int64_t> p = c.explicit_paddings;
        c.explicit_paddings = {p[0], p[1], p[6], p[7], p[2], p[3], p[4], p[5]};
    }
    return c;
}

std::string kernel_on_this_path(const std::string &name) {
    const auto entry = std::find_if(kernel_table().begin(), kernel_table().end(),
                                    [&](const KernelEntry &e) { return e.name == name; });
    if (entry == kernel_table().end() || !entry->from_avx2 || cpu_takes_avx2()) return name;
    const std::string direction = name.rfind("bwd_data_", 0) == 0 ? "bwd_data_" : "bwd_weights_";
    const size_t dtype_end = name.find('_', direction.size());
    const KernelVariant v = KernelVariant::parse(name.substr(dtype_end + 1));
    const bool stride2_twin = v.x_phases && (v.layout == "nxc" || v.layout == "nxg");
    return name.substr(0, dtype_end + 1) + v.layout + (stride2_twin ? "_s2" : "");
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

Result<ConvProblem> tf_problem(const TfConv2D &c, bool backprop_input, DType dtype) {
    tf::ConvAttrs attrs{c.strides, c.dilations, c.padding, c.explicit_paddings, c.data_format};
    return backprop_input
        ? (c.depthwise ? tf::depthwise_conv2d_backprop_input : tf::conv2d_backprop_input)(
              attrs, c.input, c.filter, c.out_backprop, dtype)
        : (c.depthwise ? tf::depthwise_conv2d_backprop_filter : tf::conv2d_backprop_filter)(
              attrs, c.input, c.filter, c.out_backprop, dtype);
}

std::string routed_kernel(const ConvProblem &p, Direction d) {
    const OperandShapes s = operand_shapes(d, p);
    HostTensor a(s.a, false, p.dtype), b(s.b, false, p.dtype), out(s.result, false, p.dtype);
    Result<std::string> k = select_kernel(d, p, a.tensor, b.tensor, out.tensor);
    EXPECT_TRUE(k.is_ok()) << k.status.message();
    return k.is_ok() ? k.value : "";
}

TfRunResult run_tf(const TfConv2D &c, bool backprop_input, const std::vector<double> &first,
                   const std::vector<double> &second, bool gapped) {
    Result<ConvProblem> p = tf_problem(c, backprop_input);
    if (!p.is_ok()) {
        RunResult r;
        r.status = p.status;
        return r;
    }
    // TF's data gradient takes (filter, dy); the API takes (dy, w).
    if (backprop_input) return run_problem(p.value, Direction::kBackwardData, second, first, gapped);
    return run_problem(p.value, Direction::kBackwardWeights, first, second, gapped);
}

namespace {


Status call(const ConvProblem &p, Direction d, const Tensor &a, const Tensor &b, const Tensor &out,
            const RunOptions &o) {
    return d == Direction::kBackwardData ? backward_data(p, a, b, out, o) : backward_weights(p, a, b, out, o);
}

}  // namespace

RunResult run_problem(const ConvProblem &p, Direction d, const std::vector<double> &first,
                      const std::vector<double> &second, bool gapped, const TestDevice &on) {
    const OperandShapes s = operand_shapes(d, p);
    HostTensor a(s.a, gapped, p.dtype, on.offset), b(s.b, gapped, p.dtype, on.offset);
    HostTensor out(s.result, gapped, p.dtype, on.offset);
    a.fill(first);
    b.fill(second);
    out.poison();
    RunOptions options;
    options.device = on.device;
    options.backend = on.backend;
    RunResult r;
    auto k = select_kernel(d, p, a.tensor, b.tensor, out.tensor, options);
    r.kernel = k.is_ok() ? k.value : "";
    if (on.device_memory && on.offset != 0) {
        // (The device copies start at their storage's first element: an offset would need
        // device handles that take pointer arithmetic, which OpenCL's do not.)
        ADD_FAILURE() << "run_problem: TestDevice::offset applies to host tensors only";
        r.status = Status::invalid("offset with device memory");
        return r;
    }
    if (on.device_memory) {
        // Each tensor's whole storage (strides and gaps carry over) in device memory; the
        // result's copy carries the poison.
        std::unique_ptr<DeviceMemory> dev[3];
        Tensor t[3];
        HostTensor *host[3] = {&a, &b, &out};
        for (int i = 0; i < 3; i++) {
            auto m = DeviceMemory::allocate(on.device, host[i]->storage.size());
            if (!m.is_ok()) {
                r.status = m.status;
                return r;
            }
            dev[i] = std::move(m.value);
            if (Status s = dev[i]->upload(host[i]->storage.data()); !s) {
                r.status = s;
                return r;
            }
            t[i] = host[i]->tensor;
            t[i].data = dev[i]->handle(), t[i].device = on.device;
        }
        r.status = call(p, d, t[0], t[1], t[2], options);
        if (r.status) r.status = dev[2]->download(out.storage.data());
    } else {
        r.status = call(p, d, a.tensor, b.tensor, out.tensor, options);
    }
    r.result = out.values();
    return r;
}

void expect_matches_at_offsets(const ConvProblem &p, Direction d, const std::vector<double> &first,
                               const std::vector<double> &second, const std::vector<double> &ref, double tolerance,
                               const std::string &kernel) {
    for (int64_t offset : {0, 1}) {
        TestDevice on;
        on.offset = offset;
        const RunResult r = run_problem(p, d, first, second, false, on);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        if (offset == 0 && !kernel.empty()) EXPECT_EQ(r.kernel, kernel_on_this_path(kernel));
        EXPECT_LE(relative_error(r.result, ref), tolerance) << r.kernel << ", tensors " << offset << " element(s) in";
    }
}

}  // namespace convgrad::test
