#include "halide_bridge.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <type_traits>

#include "HalideRuntime.h"
#include "convgrad/convgrad.h"
#ifdef CONVGRAD_HAVE_GPU
#include "HalideRuntimeCuda.h"
#include "HalideRuntimeOpenCL.h"
#endif
#include "kernel_memory.h"
#include "thread_pool.h"

namespace convgrad {
namespace {

// One per kernel call, passed as Halide's user_context: errors land in the call that raised
// them, also when several threads run kernels at once.
struct CallContext {
    std::mutex mutex;
    std::string error;
};

extern "C" void convgrad_halide_error(void *user_context, const char *message) {
    if (user_context == nullptr) {
        std::fprintf(stderr, "convgrad: Halide error outside a kernel call: %s\n", message);
        return;
    }
    auto *ctx = static_cast<CallContext *>(user_context);
    std::lock_guard<std::mutex> lock(ctx->mutex);
    if (!ctx->error.empty()) ctx->error += "; ";
    ctx->error += message;
    while (!ctx->error.empty() && (ctx->error.back() == '\n' || ctx->error.back() == ' ')) ctx->error.pop_back();
}

// Halide's multitarget wrappers ask this hook whether the CPU supports a target's features,
// for every target but the last (the fallback); the first target in the list with a yes
// runs, else the fallback. The wrapper evaluates every question, fallback's side first (the
// order is not the list's), once per kernel, and the answers depend on the CPU alone: the
// path that runs is the best one answered yes, else the fallback.
std::atomic<int> g_best_yes{4};
std::atomic<bool> g_asked{false};
// The last AOT kernel's own fallback: 1 (AVX2) for a refinement built without the SSE4.1
// body (from_avx2), else 3 (the build's last path).
std::atomic<int> g_last_fallback{3};
std::atomic<bool> g_kernel_ran{false};

bool has_feature(int count, const uint64_t *features, halide_target_feature_t f) {
    const int word = static_cast<int>(f) / 64;
    return word < count && ((features[word] >> (static_cast<int>(f) % 64)) & 1);
}

int path_of(int count, const uint64_t *features) {
    return has_feature(count, features, halide_target_feature_avx512_skylake) ? 0
           : has_feature(count, features, halide_target_feature_avx2)         ? 1
           : has_feature(count, features, halide_target_feature_sse41)        ? 2
                                                                               : 3;
}

extern "C" int convgrad_can_use_target_features(int count, const uint64_t *features) {
    // No to a path better than CONVGRAD_MAX_CPU_ISA (cpu_info.cpp), as to one the CPU lacks.
    const int path = path_of(count, features);
    const int ok = halide_default_can_use_target_features(count, features) && path >= std::max(0, max_isa_index());
    if (ok) {
        for (int best = g_best_yes.load(); path < best && !g_best_yes.compare_exchange_weak(best, path);) {
        }
    }
    g_asked.store(true);
    return ok;
}

// The hooks convgrad installs in a Halide runtime, the AOT kernels' one and each JIT kernel's
// own: errors to the call's Status, scratch from kernel_memory.cpp, parallel loops on
// thread_pool.cpp (one pool in the process, whichever runtime a kernel carries).
struct HookSetters {
    halide_error_handler_t (*error_handler)(halide_error_handler_t);
    halide_malloc_t (*malloc)(halide_malloc_t);
    halide_free_t (*free)(halide_free_t);
    halide_do_par_for_t (*do_par_for)(halide_do_par_for_t);
};

void install_hooks(const HookSetters &set) {
    set.error_handler(convgrad_halide_error);
    set.malloc(kernel_malloc);
    set.free(kernel_free);
    set.do_par_for(convgrad_do_par_for);
}

void install_handlers_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        install_hooks({halide_set_error_handler, halide_set_custom_malloc, halide_set_custom_free,
                       halide_set_custom_do_par_for});
        halide_set_custom_can_use_target_features(convgrad_can_use_target_features);
    });
}

// GPU kernels take bfloat16 as its raw bits (generators/generator_common.h: bf16_as_bits).
halide_type_t halide_type(DType t, Device kernel_device) {
    if (t == DType::kBFloat16 && kernel_device != Device::kCpu) return halide_type_t(halide_type_uint, 16);
    switch (t) {
    case DType::kFloat16: return halide_type_t(halide_type_float, 16);
    case DType::kBFloat16: return halide_type_t(halide_type_bfloat, 16);
    case DType::kFloat32: return halide_type_t(halide_type_float, 32);
    case DType::kFloat64: return halide_type_t(halide_type_float, 64);
    case DType::kInt32: return halide_type_t(halide_type_int, 32);
    }
    return halide_type_t();
}

// How a kernel sees an activation: the canonical 6-D view, the 7-D x-phase view of
// canonical.h (x = 2q + p; the registry checked that x's extent is even), or the flat view
// of generators/flat_planes.h (x spans the plane, y has extent 1 and the row width as its
// stride; the registry checked that rows are contiguous), or its flat-row view (the filter
// gradient's: x spans the image's every plane, g keeps its extent and the plane as its
// stride; the registry checked that planes are dense).
enum class ViewShape { kCanonical, kXPhases, kFlatPlane, kFlatRow };

// The shape of argument `arg` (0, 1: the inputs; 2: the result) for kernel `k`: the data
// gradient's dx is its x-phase view in the x-phase variants; the flat-plane variants see
// both activations (dy and dx, or x and dy) flat, the filter gradient's as rows of planes.
ViewShape view_shape(const KernelEntry &k, int arg) {
    const bool data = k.direction == Direction::kBackwardData;
    const bool activation = data ? arg != 1 : arg != 2;
    if (k.needs.flat_planes && activation) return data ? ViewShape::kFlatPlane : ViewShape::kFlatRow;
    if (k.needs.x_phases && arg == 2) return ViewShape::kXPhases;
    return ViewShape::kCanonical;
}

// A halide_buffer_t over a view; `dims` (7 entries) must outlive it. Sizes were range-checked
// when the view was made (validate() and make_view()).
halide_buffer_t to_halide(const CanonicalView &v, halide_dimension_t *dims, Device kernel_device,
                          ViewShape shape = ViewShape::kCanonical) {
    // Rows that are not contiguous have no flat view: such a view (a kernel called directly,
    // bypassing the registry) stays canonical, and the kernel's assertion on y's extent fails
    // with an error status instead of reading the plane with the wrong row width.
    const bool flat_requested = shape == ViewShape::kFlatPlane || shape == ViewShape::kFlatRow;
    if (flat_requested && (v.stride[canonical::kX] != 1 || !spatial_dims_nest(v))) shape = ViewShape::kCanonical;
    // (Planes that are not dense have no flat-row view: the kernel's check on x's extent fails.)
    const int64_t plane = v.extent[canonical::kX] * v.extent[canonical::kY];
    if (shape == ViewShape::kFlatRow && v.stride[canonical::kG] != plane) shape = ViewShape::kCanonical;
    const bool flat = shape == ViewShape::kFlatPlane || shape == ViewShape::kFlatRow;
    int n = 0;
    for (int d = 0; d < 6; d++) {
        const auto extent = static_cast<int32_t>(v.extent[d]), stride = static_cast<int32_t>(v.stride[d]);
        if (shape == ViewShape::kXPhases && d == canonical::kX) {
            dims[n++] = halide_dimension_t(0, extent / 2, 2 * stride);  // q
            dims[n++] = halide_dimension_t(0, 2, stride);               // p
        } else if (shape == ViewShape::kFlatPlane && d == canonical::kX) {
            dims[n++] = halide_dimension_t(0, extent * static_cast<int32_t>(v.extent[canonical::kY]), stride);
        } else if (shape == ViewShape::kFlatRow && d == canonical::kX) {
            dims[n++] = halide_dimension_t(0, static_cast<int32_t>(plane * v.extent[canonical::kG]), stride);
        } else if (flat && d == canonical::kY) {
            dims[n++] = halide_dimension_t(0, 1, static_cast<int32_t>(v.extent[canonical::kX]));
        } else {
            dims[n++] = halide_dimension_t(0, extent, stride);
        }
    }
    halide_buffer_t b{};
    b.host = v.device == Device::kCpu ? static_cast<uint8_t *>(v.data) : nullptr;  // device memory: see DeviceBuffers
    b.type = halide_type(v.dtype, kernel_device);
    b.dimensions = n;
    b.dim = dims;
    return b;
}

#ifdef CONVGRAD_HAVE_GPU
// The device side of a GPU kernel call. Tensors on the kernel's device are wrapped (no copy)
// and detached afterwards; host tensors are marked host-dirty, so the kernel uploads them,
// the result is copied back, and the device copies Halide made are freed.
class DeviceBuffers {
public:
    DeviceBuffers(void *ctx, Device device) : ctx_(ctx), device_(device) {}
    DeviceBuffers(const DeviceBuffers &) = delete;
    DeviceBuffers &operator=(const DeviceBuffers &) = delete;

    int bind(halide_buffer_t *b, const CanonicalView &v, bool is_result) {
        bufs_[n_] = b;
        wrapped_[n_] = v.device != Device::kCpu;
        results_[n_] = is_result;
        n_++;
        if (v.device == Device::kCpu) {
            if (!is_result) b->flags |= halide_buffer_flag_host_dirty;
            return 0;
        }
        const auto handle = reinterpret_cast<uint64_t>(v.data);
        return device_ == Device::kCuda ? halide_cuda_wrap_device_ptr(ctx_, b, handle)
                                        : halide_opencl_wrap_cl_mem(ctx_, b, handle);
    }

    // After the kernel: results to where the caller holds them. Device-resident results are
    // synchronised, so the call returns with them complete, as a CPU call does.
    int finish() {
        int rc = 0;
        for (int i = 0; i < n_ && rc == 0; i++) {
            if (!results_[i]) continue;
            rc = wrapped_[i] ? halide_device_sync(ctx_, bufs_[i]) : halide_copy_to_host(ctx_, bufs_[i]);
        }
        return rc;
    }

    ~DeviceBuffers() {
        for (int i = 0; i < n_; i++) {
            halide_buffer_t *b = bufs_[i];
            if (b->device == 0) continue;
            if (!wrapped_[i]) {
                halide_device_free(ctx_, b);
            } else if (device_ == Device::kCuda) {
                halide_cuda_detach_device_ptr(ctx_, b);
            } else {
                halide_opencl_detach_cl_mem(ctx_, b);
            }
        }
    }

private:
    void *ctx_;
    Device device_;
    halide_buffer_t *bufs_[3] = {};
    bool wrapped_[3] = {}, results_[3] = {};
    int n_ = 0;
};
#endif

// Kernel parameters are per canonical axis x, y, z = the problem's innermost axis first.
struct AxisArgs {
    int32_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
};

AxisArgs axis_args(const ConvProblem &p) {
    AxisArgs r;
    for (int a = 0; a < p.spatial_rank; a++) {
        const int c = canonical::spatial_index(p.spatial_rank, a);
        r.stride[c] = static_cast<int32_t>(p.strides[a]);
        r.dilation[c] = static_cast<int32_t>(p.dilations[a]);
        r.pad[c] = static_cast<int32_t>(p.pads_begin[a]);
    }
    return r;
}

}  // namespace

bool gpu_kernels_built(Device api) {
#ifdef CONVGRAD_HAVE_GPU
    return api == Device::kCuda || api == Device::kOpenCL;
#else
    (void)api;
    return false;
#endif
}

bool install_hooks_in(void *dl_handle) {
    const auto find = [&](auto &setter, const char *name) {
        setter = reinterpret_cast<std::remove_reference_t<decltype(setter)>>(dlsym(dl_handle, name));
        return setter != nullptr;
    };
    HookSetters set{};
    if (!find(set.error_handler, "halide_set_error_handler") || !find(set.malloc, "halide_set_custom_malloc") ||
        !find(set.free, "halide_set_custom_free") || !find(set.do_par_for, "halide_set_custom_do_par_for")) {
        return false;
    }
    install_hooks(set);
    return true;
}

std::string fixed_problem_text(const KernelEntry &k, const ConvProblem &p, const CanonicalView &a,
                               const CanonicalView &b, const CanonicalView &result) {
    const AxisArgs ax = axis_args(p);
    auto list = [](const int32_t *v, int n) {
        std::string s;
        for (int i = 0; i < n; i++) s += (i ? "," : "") + std::to_string(v[i]);
        return s;
    };
    std::string text = "stride:" + list(ax.stride, 3) + "/dilation:" + list(ax.dilation, 3) + "/pad:" + list(ax.pad, 3);
    const bool data = k.direction == Direction::kBackwardData;
    const std::pair<const char *, const CanonicalView *> bufs[3] = {
        {data ? "dy" : "x", &a}, {data ? "w" : "dy", &b}, {data ? "dx" : "dw", &result}};
    for (int i = 0; i < 3; i++) {
        halide_dimension_t dims[7];
        const halide_buffer_t hb = to_halide(*bufs[i].second, dims, k.device, view_shape(k, i));
        int32_t extent[7], stride[7];
        for (int d = 0; d < hb.dimensions; d++) extent[d] = dims[d].extent, stride[d] = dims[d].stride;
        text += std::string("/") + bufs[i].first + ".extent:" + list(extent, hb.dimensions) + "/" + bufs[i].first +
                ".stride:" + list(stride, hb.dimensions);
    }
    return text;
}

Status run_kernel(const KernelEntry &k, const ConvProblem &p, const CanonicalView &a, const CanonicalView &b,
                  const CanonicalView &result) {
    halide_dimension_t da[7], db[7], dr[7];
    halide_buffer_t ba = to_halide(a, da, k.device, view_shape(k, 0)), bb = to_halide(b, db, k.device, view_shape(k, 1)),
                    br = to_halide(result, dr, k.device, view_shape(k, 2));
    const AxisArgs ax = axis_args(p);
    const int32_t *stride = ax.stride, *dilation = ax.dilation, *pad = ax.pad;
#ifndef CONVGRAD_HAVE_GPU
    if (k.device != Device::kCpu) return Status::unsupported(std::string("kernel ") + k.name + ": GPU support is not built in");
#endif
#if defined(__x86_64__)
    // SSE4.1 is the AOT multitarget's floor: its fallback would fault on an older CPU. (JIT
    // kernels are compiled for this CPU.)
    static const bool cpu_too_old = expected_isa_path() == "baseline" && !x86_path_built("baseline");  // once: CPUID traps in VMs
    if (k.device == Device::kCpu && !k.jit && cpu_too_old) {
        return Status::unsupported(std::string("kernel ") + k.name +
                                   ": this CPU lacks SSE4.1, which convgrad's prebuilt x86 kernels need "
                                   "(the JIT mode compiles kernels for any x86-64 CPU)");
    }
    // A from-AVX2 refinement's fallback is its AVX2 body (the registry never gives it a CPU
    // without).
    if (k.device == Device::kCpu && !k.jit && k.from_avx2 && !cpu_takes_avx2()) {
        return Status::unsupported(std::string("kernel ") + k.name + ": built from AVX2 up (no SSE4.1 body), and this CPU's path is " +
                                   expected_isa_path() + " (CONVGRAD_MAX_CPU_ISA caps it); the registry gives these problems a plain kernel");
    }
    if (k.device == Device::kCpu && !k.jit) g_last_fallback.store(k.from_avx2 ? 1 : 3);
#endif
    return halide_call(std::string("kernel ") + k.name, [&](void *ctx) {
        auto call = [&] {
            return k.fn(ctx, stride[0], stride[1], stride[2], dilation[0], dilation[1], dilation[2], pad[0], pad[1],
                        pad[2], &ba, &bb, &br);
        };
        if (k.device == Device::kCpu) {
            g_kernel_ran.store(true);
            return call();
        }
#ifdef CONVGRAD_HAVE_GPU
        DeviceBuffers device(ctx, k.device);
        int rc = device.bind(&ba, a, false);
        if (rc == 0) rc = device.bind(&bb, b, false);
        if (rc == 0) rc = device.bind(&br, result, true);
        if (rc == 0) rc = call();
        if (rc == 0) rc = device.finish();
        return rc;
#else
        return -1;  // unreachable: refused above
#endif
    });
}

Status halide_call(const std::string &what, const std::function<int(void *user_context)> &f) {
    install_handlers_once();
    CallContext ctx;
    const int rc = f(&ctx);
    if (rc == 0) return Status::ok();
    return Status::internal(what + " failed (Halide error " + std::to_string(rc) +
                            "): " + (ctx.error.empty() ? "no message" : ctx.error));
}

// (Halide's own pool runs nothing of ours: every runtime's do_par_for is the pool's.)
void set_num_threads(int threads) { set_pool_threads(threads); }

bool x86_path_built(const std::string &path) {
    return (std::string(",") + CONVGRAD_X86_PATHS + ",").find("," + path + ",") != std::string::npos;
}

std::string selected_isa_path() {
#if defined(__aarch64__)
    // A single-target build: no multitarget wrapper asks the hook; any call ran NEON code.
    return g_kernel_ran.load() ? "arm64" : "";
#else
    if (!g_asked.load()) return "";
    int fallback = g_last_fallback.load();  // the last path built, or the refinement's AVX2
    while (fallback > 0 && !x86_path_built(kX86PathNames[fallback])) fallback--;
    return kX86PathNames[std::min(g_best_yes.load(), fallback)];
#endif
}

}  // namespace convgrad
