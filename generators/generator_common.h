// Pieces shared by the two backprop generators: dtype and layout generator params, the
// per-axis convolution parameters, and the storage/accumulator types.
#pragma once

#include <array>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "Halide.h"
#include "accumulator_check.h"
#include "canonical.h"
#include "fixed_problem_text.h"
#include "llvm_options.h"
#include "../schedules/register_file.h"

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
    // The x-phase view always has two phases.
    if (dims == canonical::kPhaseActDims) b.dim(canonical::kX + 1).set_bounds(0, 2);
    // Channels first: x contiguous; in the x-phase view x = 2q + p, p unit-strided.
    if (rows_contiguous(layout) && dims == canonical::kPhaseActDims) {
        b.dim(canonical::kX).set_stride(2);
        b.dim(canonical::kX + 1).set_stride(1);
    } else if (rows_contiguous(layout)) {
        b.dim(canonical::kX).set_stride(1);
    }
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
inline int vector_registers(const Target &t) {
    return vector_registers_of(t.has_feature(Target::AVX512), t.arch == Target::ARM && t.bits == 64);
}

// `f` (activation-shaped: c, x, y, z, g, n) seen as pairs of groups, (gpar, c, x, y, z, gp, n)
// for group 2*gp + gpar: the small-group variants (nxc_sg on x86) stage it so one vector
// holds a pair's two groups, the group innermost, and one 64-bit broadcast gives both.
inline Func group_pairs(const Func &f, const std::string &name) {
    Var gpar("gpar"), gp("gp"), c("c"), x("x"), y("y"), z("z"), n("n");
    Func pairs(name);
    pairs(gpar, c, x, y, z, gp, n) = f(c, x, y, z, gp * 2 + gpar, n);
    return pairs;
}

// A problem fixed at compile time (the JIT, runtime/jit/): the generator param `fixed`, as
// `key:v,v,...` items separated by `/` (the generator command line splits on '=' and ' '):
//   stride:sx,sy,sz  dilation:dx,dy,dz  pad:px,py,pz      (canonical axis order x, y, z)
//   <buffer>.extent:e0,e1,...  <buffer>.stride:s0,s1,...  (Halide dims, e.g. dy.extent:...)
// Kernels built with it compute the same function as the AOT ones on exactly that problem:
// the runtime parameters become constants, and the buffers' shapes and strides are asserted.
struct FixedProblem {
    bool active = false;
    FixedValues values;

    static FixedProblem parse(const std::string &text) {
        FixedProblem f;
        f.active = !text.empty();
        f.values = parse_fixed_values(text);
        return f;
    }
    const std::vector<int64_t> &get(const std::string &key, size_t count) const {
        auto it = values.find(key);
        if (it == values.end() || it->second.size() != count) {
            throw std::invalid_argument("convgrad: fixed: needs " + key + " with " + std::to_string(count) + " values");
        }
        return it->second;
    }
    // Every dimension's extent and stride of `b` (named `name`) become constants, and the
    // extents are also its estimates (for Halide's autoschedulers). A negative value leaves
    // that one at run time: experiments that find which constants a JIT kernel gains from
    // (scripts/kernel-ab.sh).
    template<typename BufferLike>
    void apply(BufferLike &b, const std::string &name) const {
        if (!active) return;
        const int dims = b.dimensions();
        const auto &e = get(name + ".extent", dims), &st = get(name + ".stride", dims);
        for (int d = 0; d < dims; d++) {
            if (e[d] >= 0) b.dim(d).set_bounds(0, static_cast<int>(e[d]));
            if (st[d] >= 0) b.dim(d).set_stride(static_cast<int>(st[d]));
            if (e[d] >= 0) b.dim(d).set_estimate(0, static_cast<int>(e[d]));
        }
    }
};

// The schedules' tunable parameters (generator param `schedule`, written by `convgrad tune`
// into schedules/tuned/*.json and read by the AOT build and the JIT), as `key:value` items
// separated by `/`. A key may be qualified by an ISA path, `avx512_skylake.pixels:5`, to
// apply only when compiling for it (a multitarget builds every path from one param string);
// the qualified key wins. Unset keys keep the schedules' defaults; unknown keys are errors.
//   data:    pixels (x tile), vectors (channel vectors per tile), rows7 (7-pixel branch, 0/1),
//            px_vectors (pixel-vector variants: vectors of pixels per tile),
//            block_rows (NXC, NXG, _px: dx rows per staged block of dy),
//            pw_group_kb (nxc_pw: packed filter per parallel group of slabs)
//   weights: ci_tile, co_vectors, dw_rows (depthwise: output rows per partial sum),
//            dw_positions (depthwise: positions along x per unrolled step of the tile),
//            chunk_kb (x and dy per cache block of the reduction, 0: unblocked),
//            chunk_positions (the fewest output positions per block)
//   gpu:     block (threads per block), rows_per_part (filter gradient)
class ScheduleParams {
public:
    ScheduleParams() = default;
    ScheduleParams(const std::string &text, const Target &t) : isa_(isa_path(t)) {
        static const char *const known[] = {"pixels", "vectors", "rows7", "px_vectors", "block_rows", "ci_tile", "co_vectors",
                                            "dw_rows", "dw_positions", "chunk_kb", "chunk_positions", "chunk_max_kb", "block", "rows_per_part",
                                            "wg_tiles", "wg_vectors", "wg_tile_count", "wg_chunks", "pw_group_kb"};
        std::stringstream items(text);
        std::string item;
        while (std::getline(items, item, '/')) {
            if (item.empty()) continue;
            const size_t colon = item.find(':');
            if (colon == std::string::npos) throw std::invalid_argument("convgrad: schedule: '" + item + "' has no ':'");
            const std::string key = item.substr(0, colon);
            const std::string bare = key.substr(key.find('.') == std::string::npos ? 0 : key.find('.') + 1);
            bool ok = false;
            for (const char *k : known) ok = ok || bare == k;
            if (!ok) throw std::invalid_argument("convgrad: schedule: unknown parameter '" + key + "'");
            values_[key] = std::stoi(item.substr(colon + 1));
        }
    }
    int get(const std::string &key, int fallback) const {
        if (auto it = values_.find(isa_ + "." + key); it != values_.end()) return it->second;
        if (auto it = values_.find(key); it != values_.end()) return it->second;
        return fallback;
    }
    // The names `convgrad info` uses for the paths a build compiles.
    static std::string isa_path(const Target &t) {
        if (t.has_feature(Target::CUDA)) return "cuda";
        if (t.has_feature(Target::OpenCL)) return "opencl";
        if (t.arch == Target::ARM) return "arm64";
        if (t.has_feature(Target::AVX512_Skylake)) return "avx512_skylake";
        if (t.has_feature(Target::AVX2)) return "avx2";
        if (t.has_feature(Target::SSE41)) return "sse41";
        return "baseline";
    }

private:
    std::string isa_;
    std::map<std::string, int> values_;
};

// a / b rounded up, for b > 0 (Halide's division rounds down).
inline Expr ceil_div(const Expr &a, const Expr &b) { return (a + b - 1) / b; }

// True for a square 2-D filter of taps x taps, given its extents along x, y and z.
inline Expr square_2d_filter(const Expr &kx, const Expr &ky, const Expr &kz, int taps) {
    return kx == taps && ky == taps && kz == 1;
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
    GeneratorParam<std::string> fixed{"fixed", ""};  // JIT: the exact problem (FixedProblem)
    GeneratorParam<std::string> schedule{"schedule", ""};  // tuned parameters (ScheduleParams)

    // Validated by the runtime (>= 1); kernels only see canonical, checked values.
    GeneratorInput<int32_t> stride_x{"stride_x", 1}, stride_y{"stride_y", 1}, stride_z{"stride_z", 1};
    GeneratorInput<int32_t> dilation_x{"dilation_x", 1}, dilation_y{"dilation_y", 1}, dilation_z{"dilation_z", 1};
    GeneratorInput<int32_t> pad_x{"pad_x", 0}, pad_y{"pad_y", 0}, pad_z{"pad_z", 0};

    // Halide's entry point: the variant's algorithm and schedule (T::generate_variant), then,
    // on CPU targets, the check that every allocation of the accumulator holds its update
    // (accumulator_check.h), run by the pipeline's lowering. Rfactor's intermediate is
    // checked in generic kernels only (the AOT build's, the tuner's): with a fixed problem
    // Halide proves some chunks' partial sums empty (rows past the problem's last, in a
    // chunk loop it partitions) and rightly drops their update, which the check cannot tell
    // from a dropped one.
    void generate() {
        const Target t = this->get_target();
        // (before LLVM's first use in this process)
        choose_llvm_options(t, storage(), static_cast<T *>(this)->slp_vectorizer_pays());
        static_cast<T *>(this)->generate_variant();
        if (!t.has_gpu_feature()) {
            this->get_pipeline().add_custom_lowering_pass(
                new AccumulatorCheck("dtype=" + dtype.value() + " layout=" + layout.value() + " target=" + t.to_string(),
                                     /*intermediates=*/!fixed_problem().active));
        }
    }

protected:
    // Whether LLVM's SLP vectorizer runs on this variant's float32 x86 code (llvm_options.h);
    // a variant's generator hides this where it does not pay.
    bool slp_vectorizer_pays() const { return true; }
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

    // An activation in the accumulator type, zero outside its spatial extent: reads there are
    // the padding's structural zeros.
    Func zero_padded(const GeneratorInput<Buffer<>> &in, const std::string &name) const {
        using namespace canonical;
        Func padded = BoundaryConditions::constant_exterior(
            in, Halide::cast(buffer_type(), 0),
            {Range(), {0, in.dim(kX).extent()}, {0, in.dim(kY).extent()}, {0, in.dim(kZ).extent()}, Range(), Range()});
        Func f(name);
        Var c, x, y, z, g, n;
        f(c, x, y, z, g, n) = widen(padded(c, x, y, z, g, n));
        return f;
    }

    // An activation in the accumulator type, as is: a Func the schedules stage (copy).
    Func widened(const GeneratorInput<Buffer<>> &in, const std::string &name) const {
        Func f(name);
        Var c, x, y, z, g, n;
        f(c, x, y, z, g, n) = widen(in(c, x, y, z, g, n));
        return f;
    }

    // `copy` (widened(in), staged by the schedules) read as zero_padded reads `in`.
    Func zero_padded_copy(const Func &copy, const GeneratorInput<Buffer<>> &in) const {
        using namespace canonical;
        return BoundaryConditions::constant_exterior(
            copy, Halide::cast(accumulator(), 0),
            {Range(), {0, in.dim(kX).extent()}, {0, in.dim(kY).extent()}, {0, in.dim(kZ).extent()}, Range(), Range()});
    }

    // An activation in the accumulator type, for the channels-first pixel-vector variants,
    // which stage whole rows (x contiguous) in cache: zeros, then each row of `in` copied
    // over them, so a staged row has zeros at both ends (the padding, or whole vectors past
    // the row) and rows outside `in` are zeros. Read through a boundary condition instead,
    // a vector that straddles a row's end loads each lane from its own clamped address (16
    // scalar loads: the slowest part of a depthwise layer with 28-pixel rows).
    Func rows_over_zeros(const GeneratorInput<Buffer<>> &in, const std::string &name) const {
        using namespace canonical;
        Func rows = BoundaryConditions::constant_exterior(
            in, Halide::cast(buffer_type(), 0),
            {Range(), Range(), {0, in.dim(kY).extent()}, {0, in.dim(kZ).extent()}, Range(), Range()});
        const RDom row(0, in.dim(kX).extent(), name + "_row");
        Func f(name);
        Var c, x, y, z, g, n;
        f(c, x, y, z, g, n) = Halide::cast(accumulator(), 0);
        f(c, row, y, z, g, n) = widen(rows(c, row, y, z, g, n));
        return f;
    }

    // A flat view's plane (flat_planes.h) as (i, g, n) in the accumulator type, zero before
    // and after the plane: the rows above and below it.
    Func flat_plane(const GeneratorInput<Buffer<>> &in, const std::string &name) const {
        using namespace canonical;
        Func plane = BoundaryConditions::constant_exterior(
            in, Halide::cast(buffer_type(), 0), {Range(), {0, in.dim(kX).extent()}, Range(), Range(), Range(), Range()});
        Func f(name);
        Var i("i"), g("g"), n("n");
        f(i, g, n) = widen(plane(0, i, 0, 0, g, n));
        return f;
    }

    FixedProblem fixed_problem() const { return FixedProblem::parse(fixed); }

    // True where the pipeline's NCX transposing copies run through the TransposedRows pass
    // (transposed_rows.h, whose loads are 32-bit): NCX, 32-bit elements, the CPU's own
    // schedules (not a GPU's, nor an autoscheduler's).
    bool ncx_rows_pass(const Type &elements) {
        return variant_layout() == Layout::NCX && elements.bits() == 32 && !this->get_target().has_gpu_feature() &&
               !autoscheduled();
    }
    ScheduleParams schedule_params() const { return ScheduleParams(schedule, this->get_target()); }

    // Halide's autoschedulers (generator param auto_schedule=true, -s NAME -p PLUGIN) replace
    // the hand schedules. They need estimates of every input: only fixed problems have them,
    // and such a pipeline is only valid near its estimates anyway (shared/docs/halide14.md).
    bool autoscheduled() {
        if (!this->get_auto_schedule()) return false;
        const FixedProblem f = fixed_problem();
        if (!f.active) throw std::invalid_argument("convgrad: auto_schedule needs a fixed problem (generator param fixed)");
        const auto &s = f.get("stride", 3), &d = f.get("dilation", 3), &p = f.get("pad", 3);
        GeneratorInput<int32_t> *params[3][3] = {{&stride_x, &stride_y, &stride_z},
                                                 {&dilation_x, &dilation_y, &dilation_z},
                                                 {&pad_x, &pad_y, &pad_z}};
        for (int a = 0; a < 3; a++) {
            params[0][a]->set_estimate(static_cast<int>(s[a]));
            params[1][a]->set_estimate(static_cast<int>(d[a]));
            params[2][a]->set_estimate(static_cast<int>(p[a]));
        }
        return true;
    }

    // Axes in canonical order x, y, z: the runtime parameters, or a fixed problem's constants
    // (the scalar inputs then stay in the signature, unused, so JIT and AOT kernels are
    // called alike).
    std::array<AxisParams, 3> axes() const {
        const FixedProblem f = fixed_problem();
        if (f.active) {
            const auto &s = f.get("stride", 3), &d = f.get("dilation", 3), &p = f.get("pad", 3);
            std::array<AxisParams, 3> a;
            for (int i = 0; i < 3; i++) {
                a[i] = {Expr(static_cast<int>(s[i])), Expr(static_cast<int>(d[i])), Expr(static_cast<int>(p[i]))};
            }
            return a;
        }
        return {AxisParams{stride_x, dilation_x, pad_x}, AxisParams{stride_y, dilation_y, pad_y},
                AxisParams{stride_z, dilation_z, pad_z}};
    }
    Expr unit_stride() const { return stride_2d(1); }
    // Strides (s, s, 1): 2-D layers (z has extent 1) with stride s along x and y.
    Expr stride_2d(int s) const {
        const auto a = axes();
        return a[0].stride == s && a[1].stride == s && a[2].stride == 1;
    }
    Expr unit_dilation() const {
        const auto a = axes();
        return a[0].dilation == 1 && a[1].dilation == 1 && a[2].dilation == 1;
    }
};

}  // namespace convgrad::gen
