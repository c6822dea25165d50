// The C API (include/convgrad.h): DLPack tensors and a descriptor in, the C++ API underneath.
// The descriptor carries attributes only; sizes come from the tensors' shapes, so this file
// only reads shapes into a ConvProblem. validate() and the C++ entry points then check
// everything else with the same messages the other frontends get.
#include "convgrad.h"

#include <exception>
#include <string>

#include "convgrad/convgrad.h"
#include "gpu_devices.h"

namespace convgrad {
namespace {

thread_local std::string last_error;

convgrad_status finish(const Status &s) {
    last_error = s.is_ok() ? "" : s.message();
    return static_cast<convgrad_status>(s.code());
}

Result<DType> dtype_of(const DLDataType &t, const char *name) {
    const std::string where = std::string(name) + ": ";
    if (t.lanes != 1) return Status::invalid(where + "vector dtypes (lanes " + std::to_string(t.lanes) + ") are not supported");
    if (t.code == kDLFloat && t.bits == 16) return DType::kFloat16;
    if (t.code == kDLFloat && t.bits == 32) return DType::kFloat32;
    if (t.code == kDLFloat && t.bits == 64) return DType::kFloat64;
    if (t.code == kDLBfloat && t.bits == 16) return DType::kBFloat16;
    if (t.code == kDLInt && t.bits == 32) return DType::kInt32;
    return Status::invalid(where + "dtype (code " + std::to_string(t.code) + ", " + std::to_string(t.bits) +
                           " bits) is not one of float16, bfloat16, float32, float64, int32");
}

Result<Tensor> tensor_of(const DLTensor *t, const char *name) {
    const std::string where = std::string(name) + ": ";
    if (t == nullptr) return Status::invalid(where + "is NULL");
    Device device = Device::kCpu;
    switch (t->device.device_type) {
    case kDLCPU: break;
    case kDLCUDA: device = Device::kCuda; break;
    case kDLOpenCL: device = Device::kOpenCL; break;
    default:
        return Status::unsupported(where + "device type " + std::to_string(t->device.device_type) +
                                   " is not supported; the C API takes kDLCPU, kDLCUDA and kDLOpenCL tensors");
    }
    const int gpu = gpu_device_index();  // Halide's GPU runtimes use this one device
    if (device != Device::kCpu && t->device.device_id != gpu) {
        return Status::unsupported(where + "device_id " + std::to_string(t->device.device_id) +
                                   ": kernels run on device " + std::to_string(gpu) + " (set HL_GPU_DEVICE)");
    }
    if (device == Device::kOpenCL && t->byte_offset != 0) {
        return Status::unsupported(where + "an OpenCL tensor must start at its cl_mem (byte_offset 0)");
    }
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == nullptr)) return Status::invalid(where + "has no shape");
    auto dtype = dtype_of(t->dtype, name);
    if (!dtype.is_ok()) return dtype.status;
    Tensor out;
    out.data = t->data == nullptr ? nullptr : static_cast<char *>(t->data) + t->byte_offset;
    out.dtype = dtype.value;
    out.device = device;
    out.shape.assign(t->shape, t->shape + t->ndim);
    if (t->strides != nullptr) out.strides.assign(t->strides, t->strides + t->ndim);
    return out;
}

// Reads N, C and the spatial sizes of an activation shape in the descriptor's layout.
struct ActivationDims {
    int64_t n = 0, c = 0;
    SpatialDims size{1, 1, 1};
};

Result<ActivationDims> activation_dims(const Shape &s, int rank, bool nxc, const char *name) {
    if (static_cast<int>(s.size()) != rank + 2) {
        return Status::invalid(std::string(name) + ": expected " + std::to_string(rank + 2) + " dimensions (" +
                               (nxc ? "N, spatial..., C" : "N, C, spatial...") + "), got " + shape_string(s));
    }
    ActivationDims d;
    d.n = s[0];
    d.c = nxc ? s[rank + 1] : s[1];
    for (int i = 0; i < rank; i++) d.size[i] = s[(nxc ? 1 : 2) + i];
    return d;
}

Result<SpatialDims> kernel_dims(const Shape &s, int rank, convgrad_filter_layout layout, const char *name) {
    if (static_cast<int>(s.size()) != rank + 2) {
        return Status::invalid(std::string(name) + ": expected " + std::to_string(rank + 2) +
                               " dimensions, got " + shape_string(s));
    }
    SpatialDims k{1, 1, 1};
    for (int i = 0; i < rank; i++) k[i] = s[(layout == CONVGRAD_OIX ? 2 : 0) + i];
    return k;
}

// The problem of one call: attributes from the descriptor, sizes from the activations
// (`input` is x or dx, `output` is dy) and the filter's spatial extent.
Result<ConvProblem> problem_of(const convgrad_conv_desc *d, const Tensor &input, const char *input_name,
                               const Tensor &output, const Tensor &filter, const char *filter_name) {
    if (d == nullptr) return Status::invalid("desc: is NULL");
    if (d->version != CONVGRAD_C_API_VERSION) {
        return Status::invalid("desc.version: " + std::to_string(d->version) + " (this library speaks " +
                               std::to_string(CONVGRAD_C_API_VERSION) + "; use convgrad_conv_desc_default)");
    }
    if (d->spatial_rank < 1 || d->spatial_rank > 3) {
        return Status::invalid("desc.spatial_rank: " + std::to_string(d->spatial_rank) + " (must be 1, 2 or 3)");
    }
    if (d->activation_layout != CONVGRAD_NXC && d->activation_layout != CONVGRAD_NCX) {
        return Status::invalid("desc.activation_layout: " + std::to_string(d->activation_layout));
    }
    if (d->filter_layout < CONVGRAD_XIO || d->filter_layout > CONVGRAD_XGM) {
        return Status::invalid("desc.filter_layout: " + std::to_string(d->filter_layout));
    }
    const int rank = d->spatial_rank;
    const bool nxc = d->activation_layout == CONVGRAD_NXC;
    auto in = activation_dims(input.shape, rank, nxc, input_name);
    if (!in.is_ok()) return in.status;
    auto out = activation_dims(output.shape, rank, nxc, "dy");
    if (!out.is_ok()) return out.status;
    auto k = kernel_dims(filter.shape, rank, static_cast<convgrad_filter_layout>(d->filter_layout), filter_name);
    if (!k.is_ok()) return k.status;

    ConvProblem p;
    p.spatial_rank = rank;
    p.batch = in.value.n;
    p.groups = d->groups;
    p.in_channels = in.value.c;
    p.out_channels = out.value.c;
    p.input_size = in.value.size;
    p.output_size = out.value.size;
    p.kernel_size = k.value;
    for (int i = 0; i < 3; i++) {
        const bool used = i < rank;
        p.strides[i] = used ? d->strides[i] : 1;
        p.dilations[i] = used ? d->dilations[i] : 1;
        p.pads_begin[i] = used ? d->pads_begin[i] : 0;
        p.pads_end[i] = used ? d->pads_end[i] : 0;
    }
    p.activation_layout = nxc ? ActivationLayout::kNXC : ActivationLayout::kNCX;
    p.filter_layout = d->filter_layout == CONVGRAD_XIO   ? FilterLayout::kXIO
                      : d->filter_layout == CONVGRAD_OIX ? FilterLayout::kOIX
                                                         : FilterLayout::kXGM;
    p.dtype = input.dtype;
    Status s = validate(p);
    if (!s.is_ok()) return s;
    return p;
}

// One gradient call: `a`, `b` in, `result` written; `input` names which of them is x/dx.
template<typename Call>
convgrad_status run_c(const convgrad_conv_desc *d, const DLTensor *a, const char *a_name, const DLTensor *b,
                      const char *b_name, const DLTensor *result, const char *result_name, bool data_gradient,
                      Call call) {
    try {
        auto ta = tensor_of(a, a_name);
        if (!ta.is_ok()) return finish(ta.status);
        auto tb = tensor_of(b, b_name);
        if (!tb.is_ok()) return finish(tb.status);
        auto tr = tensor_of(result, result_name);
        if (!tr.is_ok()) return finish(tr.status);
        // data gradient: (dy, w) -> dx; filter gradient: (x, dy) -> dw
        const Tensor &input = data_gradient ? tr.value : ta.value;
        const Tensor &output = data_gradient ? ta.value : tb.value;
        const Tensor &filter = data_gradient ? tb.value : tr.value;
        auto p = problem_of(d, input, data_gradient ? result_name : a_name, output, filter,
                            data_gradient ? b_name : result_name);
        if (!p.is_ok()) return finish(p.status);
        // Calls run where the tensors live: on the device of any device-resident tensor (the
        // C++ API checks they agree), else on the CPU.
        RunOptions options;
        for (const Tensor *t : {&ta.value, &tb.value, &tr.value}) {
            if (t->device != Device::kCpu) options.device = t->device;
        }
        return finish(call(p.value, ta.value, tb.value, tr.value, options));
    } catch (const std::exception &e) {
        return finish(Status::internal(std::string("unexpected error: ") + e.what()));
    } catch (...) {
        return finish(Status::internal("unexpected error"));
    }
}

}  // namespace
}  // namespace convgrad

extern "C" {

convgrad_conv_desc convgrad_conv_desc_default(int32_t spatial_rank) {
    convgrad_conv_desc d{};
    d.version = CONVGRAD_C_API_VERSION;
    d.spatial_rank = spatial_rank;
    d.groups = 1;
    for (int i = 0; i < 3; i++) d.strides[i] = d.dilations[i] = 1;
    d.activation_layout = CONVGRAD_NXC;
    d.filter_layout = CONVGRAD_XIO;
    return d;
}

convgrad_status convgrad_backward_data(const convgrad_conv_desc *desc, const DLTensor *dy, const DLTensor *w,
                                       const DLTensor *dx) {
    return convgrad::run_c(desc, dy, "dy", w, "w", dx, "dx", true,
                           [](const convgrad::ConvProblem &p, const convgrad::Tensor &a, const convgrad::Tensor &b,
                              const convgrad::Tensor &r, const convgrad::RunOptions &o) {
                               return convgrad::backward_data(p, a, b, r, o);
                           });
}

convgrad_status convgrad_backward_weights(const convgrad_conv_desc *desc, const DLTensor *x, const DLTensor *dy,
                                          const DLTensor *dw) {
    return convgrad::run_c(desc, x, "x", dy, "dy", dw, "dw", false,
                           [](const convgrad::ConvProblem &p, const convgrad::Tensor &a, const convgrad::Tensor &b,
                              const convgrad::Tensor &r, const convgrad::RunOptions &o) {
                               return convgrad::backward_weights(p, a, b, r, o);
                           });
}

const char *convgrad_last_error(void) { return convgrad::last_error.c_str(); }

void convgrad_set_num_threads(int threads) { convgrad::set_num_threads(threads); }

const char *convgrad_version(void) { return "convgrad " CONVGRAD_VERSION " (C API 1)"; }

}  // extern "C"
