// The public entry points: check options and tensors, handle empty reductions, dispatch.
#include "convgrad/convgrad.h"
#include "halide_bridge.h"
#include "kernel_registry.h"

namespace convgrad {
namespace {

Status check_options(const RunOptions &o) {
    if (o.device != Device::kCpu) {
        return Status::unsupported(std::string("device: ") + (o.device == Device::kCuda ? "cuda" : "opencl") +
                                   " kernels are not built into this convgrad; use cpu");
    }
    if (o.backend == Backend::kJit) {
        return Status::unsupported("backend: jit is not available in this build; use aot or auto");
    }
    return Status::ok();
}

// The three tensors of one call, as canonical views; `result` is written.
struct CallViews {
    CanonicalView a, b, result;
};

struct ArgSpec {
    TensorRole role;
    const char *name;
};

Result<CallViews> make_views(const ConvProblem &p, const Tensor &a, ArgSpec as, const Tensor &b, ArgSpec bs,
                             const Tensor &result, ArgSpec rs) {
    CallViews v;
    auto va = make_view(p, as.role, a, as.name, false);
    if (!va.is_ok()) return va.status;
    auto vb = make_view(p, bs.role, b, bs.name, false);
    if (!vb.is_ok()) return vb.status;
    auto vr = make_view(p, rs.role, result, rs.name, true);
    if (!vr.is_ok()) return vr.status;
    return CallViews{va.value, vb.value, vr.value};
}

// The kernel for a call. The activation views decide the layout variant: dy and dx for the
// data gradient, x and dy for the filter gradient.
Result<const KernelEntry *> find_kernel(Direction d, const ConvProblem &p, const CallViews &v) {
    const CanonicalView &second = d == Direction::kBackwardData ? v.result : v.b;
    const KernelEntry *k = select_entry(d, p, v.a, second);
    if (k == nullptr) {
        return Status::unsupported(std::string("dtype: no ") + (d == Direction::kBackwardData ? "data" : "filter") +
                                   "-gradient kernel for " + dtype_name(p.dtype) + " in this build");
    }
    return k;
}

Status run(Direction d, const ConvProblem &p, const CallViews &v) {
    if (v.result.num_elements() == 0) return Status::ok();
    if (v.a.num_elements() == 0 || v.b.num_elements() == 0) {
        fill_zero(v.result);  // an empty sum: zeros, never uninitialised memory
        return Status::ok();
    }
    auto k = find_kernel(d, p, v);
    if (!k.is_ok()) return k.status;
    return run_kernel(*k.value, p, v.a, v.b, v.result);
}

constexpr ArgSpec kDy{TensorRole::kOutput, "dy"};
constexpr ArgSpec kW{TensorRole::kFilter, "w"};
constexpr ArgSpec kDx{TensorRole::kInput, "dx"};
constexpr ArgSpec kX{TensorRole::kInput, "x"};
constexpr ArgSpec kDw{TensorRole::kFilter, "dw"};

Result<CallViews> prepare(Direction d, const ConvProblem &p, const Tensor &a, const Tensor &b,
                          const Tensor &result, const RunOptions &options) {
    if (Status s = check_options(options); !s) return s;
    if (Status s = validate(p); !s) return s;
    return d == Direction::kBackwardData ? make_views(p, a, kDy, b, kW, result, kDx)
                                         : make_views(p, a, kX, b, kDy, result, kDw);
}

}  // namespace

Status backward_data(const ConvProblem &p, const Tensor &dy, const Tensor &w, const Tensor &dx,
                     const RunOptions &options) {
    auto v = prepare(Direction::kBackwardData, p, dy, w, dx, options);
    if (!v.is_ok()) return v.status;
    return run(Direction::kBackwardData, p, v.value);
}

Status backward_weights(const ConvProblem &p, const Tensor &x, const Tensor &dy, const Tensor &dw,
                        const RunOptions &options) {
    auto v = prepare(Direction::kBackwardWeights, p, x, dy, dw, options);
    if (!v.is_ok()) return v.status;
    return run(Direction::kBackwardWeights, p, v.value);
}

Result<std::string> select_kernel(Direction d, const ConvProblem &p, const Tensor &a, const Tensor &b,
                                  const Tensor &result) {
    auto v = prepare(d, p, a, b, result, RunOptions{});
    if (!v.is_ok()) return v.status;
    auto k = find_kernel(d, p, v.value);
    if (!k.is_ok()) return k.status;
    return std::string(k.value->name);
}

std::vector<KernelInfo> registered_kernels() {
    std::vector<KernelInfo> out;
    for (const KernelEntry &e : kernel_table()) out.push_back({e.name, e.direction, e.dtype, e.layout});
    return out;
}

}  // namespace convgrad
