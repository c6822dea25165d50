// The public entry points: check options and tensors, handle empty reductions, dispatch.
#include <memory>
#include <string>
#include <string_view>

#include "convgrad/convgrad.h"
#include "dilation_phases.h"
#include "gpu_devices.h"
#include "halide_bridge.h"
#include "jit_hook.h"
#include "kernel_memory.h"
#include "kernel_registry.h"
#include "thread_pool.h"
#include "widening.h"

namespace convgrad {
namespace {

Status check_options(const RunOptions &o) {
    if (Status cap = isa_cap_status(); !cap.is_ok()) return cap;
    if (o.backend == Backend::kJit && jit_provider() == nullptr) {
        return Status::unsupported("backend: jit is not enabled: link convgrad_jit and call convgrad::jit::enable()");
    }
    if (o.backend == Backend::kJit && o.device != Device::kCpu && o.device != Device::kAuto) {
        return Status::unsupported("backend: jit compiles CPU kernels only; use aot for cuda and opencl");
    }
    return Status::ok();
}

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

// Where a call runs (RunOptions::device, see convgrad/tensor.h), checked against where its
// tensors live: the CPU reads host memory only, and one call uses one GPU api.
Result<Placement> place(const RunOptions &o, const CallViews &v) {
    Device resident = Device::kCpu;
    const char *resident_arg = nullptr;
    const std::pair<const CanonicalView *, const char *> views[] = {{&v.a, "first input"}, {&v.b, "second input"},
                                                                    {&v.result, "result"}};
    for (const auto &[view, arg] : views) {
        if (view->device == Device::kCpu) continue;
        if (resident != Device::kCpu && view->device != resident) {
            return Status::invalid(std::string("device: the ") + resident_arg + " is in " + device_name(resident) +
                                   " memory and the " + arg + " in " + device_name(view->device) + " memory");
        }
        resident = view->device, resident_arg = arg;
    }
    Device want = o.device;
    if (want == Device::kAuto) {
        want = resident != Device::kCpu                                                       ? resident
               : gpu_kernels_built(Device::kCuda) && device_available(Device::kCuda, nullptr) ? Device::kCuda
                                                                                                : Device::kCpu;
    }
    if (resident != Device::kCpu && want != resident) {
        return Status::invalid(std::string("device: the ") + resident_arg + " is in " + device_name(resident) +
                               " memory, which a " + device_name(want) + " call cannot read; run it on " +
                               device_name(resident) + " (or auto)");
    }
    Placement where{want, 0};
    if (want == Device::kCpu) return where;
    if (!gpu_kernels_built(want)) {
        return Status::unsupported(std::string("device: this convgrad was built without ") + device_name(want) +
                                   " kernels (CMake option CONVGRAD_GPU)");
    }
    std::string why;
    if (!device_available(want, &why)) return Status::unsupported(std::string("device ") + device_name(want) + ": " + why);
    if (want == Device::kCuda) where.cuda_capability = cuda_capability();
    return where;
}

// The kernel for a call. The activation views decide the layout variant: dy and dx for the
// data gradient, x and dy for the filter gradient.
Result<const KernelEntry *> find_kernel(Direction d, const ConvProblem &p, const CallViews &v, const Placement &where) {
    const CanonicalView &second = d == Direction::kBackwardData ? v.result : v.b;
    const KernelEntry *k = select_entry(d, p, v.a, second, where);
    if (k == nullptr) {
        std::string on = device_name(where.device);
        if (where.device == Device::kCuda) on += " (sm_" + std::to_string(where.cuda_capability) + ")";
        return Status::unsupported(std::string("dtype: no ") + (d == Direction::kBackwardData ? "data" : "filter") +
                                   "-gradient kernel for " + dtype_name(p.dtype) + " on " + on + " in this build");
    }
    return k;
}

// The kernel a call runs: the registry's entry, or with a JIT (Backend::kJit, or kAuto where
// one is already compiled) the same entry specialised to this exact problem.
Result<KernelEntry> resolve_kernel(const KernelEntry &k, const ConvProblem &p, const CallViews &v, Backend backend,
                                   JitLookup how) {
    JitProvider *jit = jit_provider();
    if (backend == Backend::kAot || jit == nullptr || k.device != Device::kCpu) return k;
    auto fn = jit->kernel(k, fixed_problem_text(k, p, v.a, v.b, v.result), how);
    if (!fn.is_ok()) {
        if (backend == Backend::kJit && how == JitLookup::kCompile) return fn.status;
        return k;  // nothing compiled yet for this problem: the AOT kernel
    }
    KernelEntry jk = k;
    jk.fn = fn.value;
    jk.jit = true;
    return jk;
}

// The calls a gradient runs as: its dilation phases (dilation_phases.h) where one's kernel
// is a Winograd one and none falls to the scalar `any` (the filter gradient's in the float
// types add_into adds), else itself. (A phase too small for whole tiles takes a direct
// kernel over views of every d-th pixel: NHWC's, with channels contiguous, run as fast as
// over the whole tensor (dl_3x3_d2's filter gradient: phases of 16x16 have too few tiles
// for the Winograd sums, and all four phases ran 19.7 ms, the dilated call 24.7 ms); the
// channels-first ones need contiguous pixels, so NCHW's would run `any`.)
std::vector<PhaseCall> calls_for(Direction d, const ConvProblem &p, const CallViews &v, const Placement &where) {
    const bool addable = p.dtype == DType::kFloat32 || p.dtype == DType::kFloat64;
    if (where.device != Device::kCpu || (d == Direction::kBackwardWeights && !addable)) return {PhaseCall{p, v}};
    std::vector<PhaseCall> phases = dilation_phases(d, p, v);
    bool winograd = false;
    for (const PhaseCall &c : phases) {
        if (c.views.a.num_elements() == 0 || c.views.b.num_elements() == 0) continue;  // zeros (run_one)
        const CanonicalView &act1 = d == Direction::kBackwardData ? c.views.result : c.views.b;
        const KernelEntry *k = select_entry(d, c.problem, c.views.a, act1, where);
        if (k == nullptr || std::string(k->layout) == "any") return {PhaseCall{p, v}};
        winograd = winograd || k->needs.winograd;
    }
    return winograd ? phases : std::vector<PhaseCall>{PhaseCall{p, v}};
}

Status run_one(Direction d, const ConvProblem &p, const CallViews &v, const Placement &where, Backend backend) {
    if (v.result.num_elements() == 0) return Status::ok();
    if (v.a.num_elements() == 0 || v.b.num_elements() == 0) {
        // An empty sum: zeros, never uninitialised memory.
        if (v.result.device != Device::kCpu) {
            return Status::unsupported("an empty reduction (no input elements) into device memory: zero the result "
                                       "on the device instead");
        }
        fill_zero(v.result);
        return Status::ok();
    }
    auto k = find_kernel(d, p, v, where);
    if (!k.is_ok()) return k.status;
    auto kernel = resolve_kernel(*k.value, p, v, backend,
                                 backend == Backend::kJit ? JitLookup::kCompile : JitLookup::kCompiled);
    if (!kernel.is_ok()) return kernel.status;
    return run_kernel(kernel.value, p, v.a, v.b, v.result);
}

Status run(Direction d, const ConvProblem &p, const CallViews &v, const Placement &where, Backend backend) {
    std::vector<PhaseCall> calls = calls_for(d, p, v, where);
    // A filter gradient's phases each give a whole dw: the first writes it, the others
    // their own compact copies, added to it. (From the kernels' allocator, which keeps a
    // thread's last large blocks: fresh ones page-faulted in on every call.)
    const bool summed = d == Direction::kBackwardWeights && calls.size() > 1;
    std::vector<KernelBlock> storage;
    std::vector<CanonicalView> parts;
    for (size_t i = 0; i < calls.size(); i++) {
        PhaseCall &c = calls[i];
        if (summed && i > 0) {
            storage.push_back(kernel_block(c.views.result.num_elements() * dtype_size(p.dtype)));
            if (storage.back() == nullptr) return Status::internal("out of memory for a dilation phase's filter gradient");
            c.views.result = like_compact(c.views.result, storage.back().get());
            parts.push_back(c.views.result);
        }
        if (Status s = run_one(d, c.problem, c.views, where, backend); !s) return s;
    }
    add_into(v.result, parts);
    return Status::ok();
}

constexpr ArgSpec kDy{TensorRole::kOutput, "dy"};
constexpr ArgSpec kW{TensorRole::kFilter, "w"};
constexpr ArgSpec kDx{TensorRole::kInput, "dx"};
constexpr ArgSpec kX{TensorRole::kInput, "x"};
constexpr ArgSpec kDw{TensorRole::kFilter, "dw"};

struct PreparedCall {
    ConvProblem problem;  // as the kernels see it (flatten_pointwise)
    CallViews views;
    Placement where;
};

// A pointwise convolution (every kernel size 1, unit strides, no padding) maps each position
// to itself, so over views whose spatial dims nest it is a 1-D convolution over the
// flattened positions: the kernels tile one long row per image instead of rows of W, with
// no partial tile at every row's end. Measured (alternated runs): rn50_1x1_56 NCHW data
// 1.18x (56-pixel rows filled 3.5 of 4 vectors), filter 1.10x; rn50_1x1_7 NCHW 1.08x both;
// rn50_1x1_56 NHWC filter 1.10x; NHWC data gradients unchanged.
// The filter gradient takes the positions as rows of at most kPointwiseRow (the longest
// that divides them): its kernels cut the reduction into cache-sized chunks of rows, and
// one row per image made each chunk a whole image (rn50_1x1_56: 4 MB, past the L2; as 7
// rows of 448, kernel alone 5.96 -> 5.23 ms). So does the data gradient, whose threads
// take rows: one per image left a batch-1 layer on one thread (rn50_1x1_56 at batch 1,
// nxc_pw: 0.59 -> 0.39 ms). (NCHW rn50_1x1_56 ran 0.8x over rows of 448 on ncx_cs, whose
// transposing copies go by rows; its pointwise layers with rows of 16 or more positions
// now take ncx_px_pw.)
constexpr int64_t kPointwiseRow = 512;
constexpr int64_t kPointwiseMinRow = 64;  // shorter rows: a whole plane, as before

int64_t pointwise_row(int64_t positions) {
    if (positions <= kPointwiseRow) return positions;
    for (int64_t row = kPointwiseRow; row >= kPointwiseMinRow; row--) {
        if (positions % row == 0) return row;
    }
    return positions;
}

// The data gradient's threads take rows (y, n), and each row streams the whole filter through
// the cache once (schedules/cpu_bwd_data.cpp: each channel slab runs over the row's tiles), so
// a row of a small plane paid for the filter over few positions: rn50_1x1_7's 4 MB per 49.
// Where the images' positions nest too (NXC: n's stride is the plane's), a row spans `k`
// images, the most that keep rows within kPointwiseRow positions and give no thread more
// images than a row per image does (ceil(N / k / threads) * k <= ceil(N / threads)), so a
// row per image stays wherever folding would cost balance. The sums are the same, bit for
// bit: each pixel's reduction is its own. Kernel alone (nxc_pw, AVX-512, 2 threads, 8
// images): 2048 <- 512 channels on 7x7 1.14-1.40x as rows of 196, 512 <- 2048 1.10x;
// 14x14 planes (rows of 196 already) 0.96-1.06x as 392, no gain: longer rows pay only where
// the filter outweighs them.
int64_t images_per_row(int64_t positions, int64_t images, int threads) {
    const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
    const int64_t per_thread = ceil_div(images, threads);
    for (int64_t k = images; k > 1; k--) {
        if (images % k == 0 && k * positions <= kPointwiseRow && ceil_div(images / k, threads) * k <= per_thread) return k;
    }
    return 1;
}

// (acts: dy and dx, as flatten_pointwise made them.)
void fold_images_into_rows(ConvProblem &p, CanonicalView *const (&acts)[2], const Placement &where) {
    if (where.device != Device::kCpu || p.spatial_rank != 1) return;  // (one row per image)
    for (const CanonicalView *act : acts) {
        if (act->stride[canonical::kN] != act->extent[canonical::kX] * act->stride[canonical::kX]) return;
    }
    const int64_t k = images_per_row(p.input_size[0], p.batch, pool_threads());
    if (k == 1) return;
    p.batch /= k;
    p.input_size[0] *= k;
    p.output_size[0] = p.input_size[0];
    for (CanonicalView *act : acts) {
        act->extent[canonical::kX] *= k;
        act->extent[canonical::kN] /= k;
        act->stride[canonical::kN] *= k;
    }
}

void flatten_pointwise(ConvProblem &p, CallViews &v, Direction d, const Placement &where) {
    if (!is_pointwise(p)) return;
    CanonicalView *acts[2] = {&v.a, d == Direction::kBackwardData ? &v.result : &v.b};
    for (const CanonicalView *act : acts) {
        if (!spatial_dims_nest(*act)) return;
    }
    int64_t positions = 1;
    for (int a = 0; a < p.spatial_rank; a++) positions *= p.input_size[a];
    const int64_t row = pointwise_row(positions), rows = positions / row;
    p.spatial_rank = rows == 1 ? 1 : 2;
    p.input_size = p.output_size = {row, rows, 1};
    p.kernel_size = p.strides = p.dilations = {1, 1, 1};
    p.pads_begin = p.pads_end = {0, 0, 0};
    for (CanonicalView *act : acts) {
        act->extent[canonical::kX] = row;
        act->extent[canonical::kY] = rows;
        act->stride[canonical::kY] = rows == 1 ? 0 : row * act->stride[canonical::kX];
        act->extent[canonical::kZ] = 1;
        act->stride[canonical::kZ] = 0;
    }
    if (d == Direction::kBackwardData) fold_images_into_rows(p, acts, where);
}

Result<PreparedCall> prepare(Direction d, const ConvProblem &p, const Tensor &a, const Tensor &b,
                             const Tensor &result, const RunOptions &options) {
    if (Status s = check_options(options); !s) return s;
    if (Status s = validate(p); !s) return s;
    auto v = d == Direction::kBackwardData ? make_views(p, a, kDy, b, kW, result, kDx)
                                           : make_views(p, a, kX, b, kDy, result, kDw);
    if (!v.is_ok()) return v.status;
    auto where = place(options, v.value);
    if (!where.is_ok()) return where.status;
    PreparedCall c{p, v.value, where.value};
    flatten_pointwise(c.problem, c.views, d, c.where);
    return c;
}

// CPU problems no kernel of their own dtype takes but the generic `any` (generators/
// CMakeLists.txt builds no 16-bit CPU kernels, and int32's generic ones alone) run on a
// wider dtype's kernels, over copies of their inputs (widening.h), with direct sums only
// (Placement):
// - float16 and bfloat16 on float32's, the result rounded back to nearest even. Their own
//   kernels had done the same inside (their tiles computed in float32 over converted
//   copies) on a few of float32's variants, for ~20 % of the kernels' build time.
// - int32 on float64's, where every sum is exact there: each product and partial sum an
//   integer of at most 2^53 in magnitude (sums_exact_in_float64), so the wrapped result is
//   int32 arithmetic's, bit for bit. int32's own kernels cost ~14 % of the x86 build time;
//   float64's run int32's dense layers as fast or faster, its depthwise ones slower with the
//   copies (bench/RESULTS.md, sixty-sixth session). Larger values take int32's generic kernel.
// A library built with kernels of its own for these dtypes (`convgrad aot --dtypes f16`) runs
// those on the problems they take.
DType wider_dtype(DType t) {
    switch (t) {
    case DType::kFloat16:
    case DType::kBFloat16: return DType::kFloat32;
    case DType::kInt32: return DType::kFloat64;
    default: return t;
    }
}

// Whether a kernel of the call's own dtype other than the generic `any` takes it: the
// registry's choice for its first dilation phase, as select_kernel reports. (A dtype with no
// CPU kernels at all, as 16-bit floats here, skips the search on every call.)
bool own_kernel_takes(Direction d, const PreparedCall &c) {
    if (!has_kernels(d, c.problem.dtype, Device::kCpu)) return false;
    const PhaseCall first = calls_for(d, c.problem, c.views, c.where)[0];
    auto k = find_kernel(d, first.problem, first.views, c.where);
    return k.is_ok() && std::string_view(k.value->layout) != "any";
}

bool runs_on_wider_kernels(Direction d, const PreparedCall &c) {
    const DType t = c.problem.dtype, wide = wider_dtype(t);
    return c.where.device == Device::kCpu && wide != t && has_kernels(d, wide, Device::kCpu) && !own_kernel_takes(d, c);
}

// Whether an int32 call's float64 sums are all exact: at most `terms` products per element
// of the result, each at most |a| * |b| (the inputs' largest magnitudes), every partial sum
// then an integer within 2^53.
bool sums_exact_in_float64(Direction d, const ConvProblem &p, uint32_t largest_a, uint32_t largest_b) {
    const SpatialDims &sum_over = d == Direction::kBackwardData ? p.kernel_size : p.output_size;
    unsigned __int128 terms = d == Direction::kBackwardData ? p.out_channels / p.groups : p.batch;
    for (int i = 0; i < p.spatial_rank; i++) terms *= static_cast<uint64_t>(sum_over[i]);
    return terms * largest_a * largest_b <= (static_cast<unsigned __int128>(1) << 53);
}

bool runs_widened(Direction d, const PreparedCall &c) {
    if (!runs_on_wider_kernels(d, c)) return false;
    if (c.problem.dtype != DType::kInt32) return true;
    return sums_exact_in_float64(d, c.problem, largest_magnitude(c.views.a), largest_magnitude(c.views.b));
}

// The wider call a widened one runs: its problem in the wider dtype, each view a compact
// copy's in the view's own order (like_compact; data unset), direct sums only.
PreparedCall widened(PreparedCall c) {
    c.problem.dtype = wider_dtype(c.problem.dtype);
    for (CanonicalView *v : {&c.views.a, &c.views.b, &c.views.result}) {
        *v = like_compact(*v, nullptr);
        v->dtype = c.problem.dtype;
    }
    c.where.direct_sums_only = true;
    return c;
}

// A call runs_on_wider_kernels takes; an int32 one whose sums would not be exact in float64
// (seen as its inputs are copied) on int32's own kernels instead.
Status run_widened(Direction d, const PreparedCall &c, Backend backend) {
    const CallViews &v = c.views;
    if (v.a.num_elements() == 0 || v.b.num_elements() == 0 || v.result.num_elements() == 0) {
        return run(d, c.problem, v, c.where, backend);  // zeros or nothing, no kernel (run_one)
    }
    PreparedCall w = widened(c);
    KernelBlock storage[3];
    CanonicalView *copies[3] = {&w.views.a, &w.views.b, &w.views.result};
    for (int i = 0; i < 3; i++) {
        storage[i] = kernel_block(copies[i]->num_elements() * dtype_size(w.problem.dtype));
        if (storage[i] == nullptr) return Status::internal("out of memory for a widened call's copies");
        copies[i]->data = storage[i].get();
    }
    const uint32_t largest_a = widen(v.a, w.views.a), largest_b = widen(v.b, w.views.b);
    if (c.problem.dtype == DType::kInt32 && !sums_exact_in_float64(d, c.problem, largest_a, largest_b)) {
        return run(d, c.problem, v, c.where, backend);
    }
    if (Status s = run(d, w.problem, w.views, w.where, backend); !s) return s;
    narrow(w.views.result, v.result);
    return Status::ok();
}

Status prepare_and_run(Direction d, const ConvProblem &p, const Tensor &a, const Tensor &b, const Tensor &result,
                       const RunOptions &options) {
    auto c = prepare(d, p, a, b, result, options);
    if (!c.is_ok()) return c.status;
    if (runs_on_wider_kernels(d, c.value)) return run_widened(d, c.value, options.backend);
    return run(d, c.value.problem, c.value.views, c.value.where, options.backend);
}

}  // namespace

Status backward_data(const ConvProblem &p, const Tensor &dy, const Tensor &w, const Tensor &dx,
                     const RunOptions &options) {
    return prepare_and_run(Direction::kBackwardData, p, dy, w, dx, options);
}

Status backward_weights(const ConvProblem &p, const Tensor &x, const Tensor &dy, const Tensor &dw,
                        const RunOptions &options) {
    return prepare_and_run(Direction::kBackwardWeights, p, x, dy, dw, options);
}

OperandShapes operand_shapes(Direction d, const ConvProblem &p) {
    if (d == Direction::kBackwardData) return {output_shape(p), filter_shape(p), input_shape(p)};
    return {input_shape(p), output_shape(p), filter_shape(p)};
}

Result<std::string> select_kernel(Direction d, const ConvProblem &p, const Tensor &a, const Tensor &b,
                                  const Tensor &result, const RunOptions &options) {
    auto prepared = prepare(d, p, a, b, result, options);
    if (!prepared.is_ok()) return prepared.status;
    // (A 16-bit one on the CPU: the float32 kernel it runs on; an int32 one, the float64
    // kernel where its sums are exact there. A dilated gradient run as phases: their first
    // one's kernel.)
    const PreparedCall c = runs_widened(d, prepared.value) ? widened(prepared.value) : prepared.value;
    const PhaseCall first = calls_for(d, c.problem, c.views, c.where)[0];
    auto k = find_kernel(d, first.problem, first.views, c.where);
    if (!k.is_ok()) return k.status;
    // With a JIT: a kernel already loaded is reported as such (selecting never compiles or loads).
    auto kernel = resolve_kernel(*k.value, first.problem, first.views, options.backend, JitLookup::kPeek);
    return (kernel.is_ok() && kernel.value.jit ? "jit:" : "") + std::string(k.value->name);
}

std::vector<KernelInfo> registered_kernels() {
    std::vector<KernelInfo> out;
    for (const KernelEntry &e : kernel_table()) out.push_back({e.name, e.direction, e.dtype, e.layout, e.device, e.from_avx2});
    return out;
}

}  // namespace convgrad
