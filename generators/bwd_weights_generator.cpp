// Filter gradient, written once for every rank, layout, grouping and dtype:
//
//   dw[ci, co, k, g] = sum over n, o of  x[ci, o*s - pb + k*d, g, n] * dy[co, o, g, n]
//
// Reads of x outside its extent are the zeros of the padding. The reduction order is fixed
// by the schedule (no atomics), so results are deterministic run to run.
#include "bwd_weights.h"
#include "flat_planes.h"
#include "next_image_prefetch.h"
#include "next_tile_prefetch.h"
#include "streaming_stores.h"
#include "transposed_rows.h"
#include "winograd.h"

namespace convgrad::gen {
namespace {

using namespace canonical;

class BwdWeights : public ConvGradGenerator<BwdWeights> {
public:
    // true: the dy-broadcast variant (ncx_db: dense channels-first layers whose dy holds at
    // least as many channels as x, e.g. pointwise expansions): the tiles broadcast dy from
    // its own rows and take vectors of x's channels, so only x is transposed
    // (schedules/cpu_bwd_weights.cpp).
    GeneratorParam<bool> dy_broadcasts{"dy_broadcasts", false};
    // true: the small-group variant (nxc_sg, ncx_sg: ResNeXt-like groups of half a vector of
    // channels, in pairs): x staged with each pair of groups' channels interleaved, so one
    // 64-bit broadcast gives both groups' x and a tile spans the two groups that share dy's
    // cache lines (schedules/cpu_bwd_weights.cpp).
    GeneratorParam<bool> small_groups{"small_groups", false};
    // Its NXC tiles ran as fast without LLVM's SLP vectorizer (generators/llvm_options.h).
    bool slp_vectorizer_pays() const { return !(small_groups && variant_layout() == Layout::NXC); }
    // true: the Winograd variant (nxc_wg: 2-D 3x3 filters, unit strides and dilations, x and
    // dy channels per group multiples of kChannelSlab; generators/winograd.h).
    GeneratorParam<bool> winograd{"winograd", false};
    // true: the staged-dy variant (nxg_sd: NHWC depthwise layers whose dy streams from
    // memory, pixels wider than two cache lines, at most 3x3 taps): each chunk's rows of dy are staged in cache
    // with x's, so the tiles, a vector of groups each, read them densely
    // (schedules/cpu_bwd_weights.cpp, runtime/src/kernel_registry.h: kStagedDyMinBytes).
    GeneratorParam<bool> staged_dy{"staged_dy", false};
    // true: the flat-plane variant (ncg_fp: depthwise NCHW, unit strides, x and dy of one
    // width, planes dense within each image; generators/flat_planes.h), on the runtime's
    // flat-row views of x and dy.
    GeneratorParam<bool> flat_planes{"flat_planes", false};
    // true: the plain-x variant (nxc_xp, ncx_xp: few products per element of x, e.g. stride-2
    // 3x3 layers): x without the blocks of the tile's channels (x_blocks), whose copy those
    // layers do not pay back (runtime/src/kernel_registry.h: kPlainXMaxProducts); ncx_xp
    // stages it as it is, nxc_xp reads it in place (s.x_in_place, below).
    GeneratorParam<bool> plain_x{"plain_x", false};
    // true: the group-task variant (nxg_gt: NHWC depthwise layers on small planes): a
    // thread's task is a block of groups over every image, summed in registers, with no
    // partial sums per chunk (schedules/cpu_bwd_weights.cpp).
    GeneratorParam<bool> group_tasks{"group_tasks", false};
    // true: the whole-reduction variant (nxc_wr: NHWC layers with few positions to reduce
    // over, e.g. 7x7 planes or batch 1): each tile sums every position in registers and
    // stores its sums into dw, without the partial sums per chunk that nxc writes, adds and
    // copies, three passes over the filter (schedules/cpu_bwd_weights.cpp).
    GeneratorParam<bool> whole_reduction{"whole_reduction", false};

    void configure() {
        const Type t = buffer_type();
        x_ = add_input<Buffer<>>("x", t, kActDims);
        dy_ = add_input<Buffer<>>("dy", t, kActDims);
        dw_ = add_output<Buffer<>>("dw", t, kFilterDims);
    }

    void generate_variant() {
        if (winograd) {
            generate_winograd();
            return;
        }
        if (flat_planes) {
            generate_flat_planes();
            return;
        }
        auto &x = *x_;
        auto &dy = *dy_;
        auto &dw = *dw_;
        const Type bt = buffer_type(), at = accumulator();
        BwdWeightsStages s;
        const std::array<AxisParams, 3> ax = axes();

        if (dy_broadcasts && (variant_layout() != Layout::NCX || get_target().has_gpu_feature())) {
            throw std::invalid_argument("convgrad: dy_broadcasts is a CPU variant of layout=ncx alone");
        }
        if (small_groups && ((variant_layout() != Layout::NXC && variant_layout() != Layout::NCX) ||
                             get_target().has_gpu_feature())) {
            throw std::invalid_argument("convgrad: small_groups is a CPU variant of layout=nxc or ncx alone");
        }
        if (staged_dy && (variant_layout() != Layout::NXG || get_target().has_gpu_feature())) {
            throw std::invalid_argument("convgrad: staged_dy is a CPU variant of layout=nxg alone");
        }
        if (plain_x && ((variant_layout() != Layout::NXC && variant_layout() != Layout::NCX && variant_layout() != Layout::NXG) ||
                        small_groups || dy_broadcasts || staged_dy || get_target().has_gpu_feature())) {
            throw std::invalid_argument("convgrad: plain_x is a CPU variant of layout=nxc, ncx or nxg alone");
        }
        if (group_tasks && (variant_layout() != Layout::NXG || staged_dy || plain_x || bt.bits() == 16 ||
                            get_target().has_gpu_feature())) {
            throw std::invalid_argument("convgrad: group_tasks is a CPU variant of layout=nxg alone, for native float types");
        }
        if (whole_reduction && (variant_layout() != Layout::NXC || small_groups || plain_x || bt.bits() == 16 ||
                                get_target().has_gpu_feature() || autoscheduled())) {
            throw std::invalid_argument("convgrad: whole_reduction is a CPU variant of layout=nxc alone, for native float types");
        }
        if (small_groups && bt.bits() == 16) {
            throw std::invalid_argument("convgrad: small_groups is a variant for native float types");
        }
        // The pairs' nested vectors (schedules/cpu_bwd_weights.cpp) on x86 only: Halide 14's ARM
        // backend computed wrong filter gradients with them (the qemu ARM64 tests: grouped
        // layers of 8 channels, relative error 1), so ARM64 builds run nxc's algorithm and
        // tiles under this variant's name.
        const bool pairs = small_groups && get_target().arch == Target::X86;

        {  // x read through its zero padding, dy widened to the accumulator type
            s.x_in = zero_padded(x, "x_in");
            s.dy_in = Func("dy_in");
            Var c, x_, y, z, g, n;
            s.dy_in(c, x_, y, z, g, n) = widen(dy(c, x_, y, z, g, n));
            if (pairs) {
                // `f` read through `pairs` (gpar, c, x, y, z, gp, n), group 2*gp + gpar, which
                // the schedule stages.
                const auto through_pairs = [&](Func &f, Func &pairs, const std::string &name) {
                    pairs = group_pairs(f, name + "_pairs");
                    f = Func(name + "_in_pairs");
                    f(c, x_, y, z, g, n) = pairs(g % 2, c, x_, y, z, g / 2, n);
                };
                through_pairs(s.x_in, s.x_pairs, "x");
                through_pairs(s.dy_in, s.dy_pairs, "dy");
            }
        }
        // nxc and ncx on CPUs: x staged in blocks of the tile's input channels, each block's pixels
        // contiguous, so a tile's broadcasts of x over a chunk's positions stream one run of
        // 32-byte pixels instead of taking a line (and, 2048 channels wide, a page) per pixel
        // (schedules/cpu_bwd_weights.cpp). Channels past the last are copies of it (the
        // block's unused slots: the tiles never read them).
        const bool cpu_schedule = !get_target().has_gpu_feature() && !autoscheduled();
        // NCX's whole transposing copies (32-bit: the pass's loads) sweep x for the pass.
        // (ncx_sg: its pairs' copies, per chunk, cpu_bwd_weights.cpp.)
        s.rows_pass = ncx_rows_pass(bt);
        const bool dense = variant_layout() == Layout::NXC || (variant_layout() == Layout::NCX && !dy_broadcasts);
        if (dense && !pairs && !plain_x && bt.bits() != 16 && cpu_schedule) {
            Var ci_i("ci_i"), ci_o("ci_o"), c, x_, y, z, g, n;
            const int b = BwdWeightsStages::ci_tile(schedule_params(), get_target());
            s.x_block = b;
            // (The slot is clamped too, so that a layer with fewer channels than a block
            // stores only its own: an RGB stem's 3, not 8.)
            // Swept blocks (s.x_blocks_swept(): the copy is a plain sweep that the
            // TransposedRows pass transposes, schedules/cpu_bwd_weights.cpp) need whole
            // blocks to read plain rows: the block's clamp is marked `likely` unneeded, so
            // Halide partitions the loop over blocks. (Elsewhere, with the unrolled gathers,
            // the partitioned loops ran AVX2's NCHW rx_g32_28 0.66x.)
            const Expr last = x.dim(kC).extent() - 1;
            const Expr channel = ci_o * b + ci_i;
            Func plain = s.x_in;
            s.x_blocks = Func("x_blocks");
            s.x_blocks(ci_i, ci_o, x_, y, z, g, n) =
                plain(Halide::min(s.x_blocks_swept() ? Halide::likely(channel) : channel, last), x_, y, z, g, n);
            s.x_in = Func("x_in_blocks");
            s.x_in(c, x_, y, z, g, n) = s.x_blocks(Halide::min(c % b, last), c / b, x_, y, z, g, n);
        }
        // Halide 14 converts 16-bit floats in software on x86 (no F16C): convert each input
        // element once instead of at every one of its uses in the tiles.
        s.staged_inputs = bt.bits() == 16;
        s.dy_broadcasts = dy_broadcasts;
        s.small_groups = pairs;
        s.staged_dy = staged_dy;
        s.group_tasks = group_tasks;
        s.whole_reduction = whole_reduction;

        const Expr out[3] = {dy.dim(kX).extent(), dy.dim(kY).extent(), dy.dim(kZ).extent()};
        const Expr x_extent[3] = {x.dim(kX).extent(), x.dim(kY).extent(), x.dim(kZ).extent()};
        const Layout lay = variant_layout();
        s.x_in_place = plain_x && (lay == Layout::NXC || lay == Layout::NXG) && bt.bits() != 16 && cpu_schedule;
        const bool frame = s.x_in_place && lay == Layout::NXG;
        // nxg_xp, strided along x: the reduction's columns are those whose taps all read
        // inside x: from first_x on, all but the last (kernel_registry.h: strided along x,
        // nxg_xp's taps read past x's end in the last column alone); the frame adds the
        // others. (With unit strides, every column, x clamped along x: the frame's columns,
        // cold, cost more than the clamp, 0.82-0.87x on 56x56 and 112x112 planes.)
        Expr first_x = 0, last_x = 0;
        if (frame) {
            const AxisParams &p = ax[0];
            const Expr strided = p.stride != 1;
            first_x = Halide::select(strided, Halide::clamp(ceil_div(p.pad_begin, p.stride), 0, out[0]), 0);
            last_x = Halide::select(strided, Halide::min(1, out[0] - first_x), 0);
        }
        s.r = RDom({{first_x, out[0] - first_x - last_x}, {0, out[1]}, {0, out[2]}, {0, dy.dim(kN).extent()}}, "r");
        const Expr o[3] = {s.r[0], s.r[1], s.r[2]};
        const Expr n = s.r[3];
        const Expr k[3] = {s.kx, s.ky, s.kz};
        Expr i[3];
        for (int a = 0; a < 3; a++) {
            i[a] = o[a] * ax[a].stride - ax[a].pad_begin + k[a] * ax[a].dilation;
        }

        // nxc_xp and nxg_xp on CPUs: x read in place, without a staged copy with its zero
        // border, each index clamped into x.
        // nxc_xp: the reduction skips the positions whose tap falls on the padding (the RDom's
        // predicate: their products are zero), so every read is inside x; the clamp only tells
        // bounds inference so, and costs a min and a max per position and tap, not per channel.
        // (Read through the boundary condition instead, every broadcast took a test, a clamp
        // and a blend: schedules/cpu_bwd_weights.cpp.) Kernel alone, against the copy:
        // rn50_3x3s2_28 1.06x, rn50_1x1_56 1.08x (bench/RESULTS.md, forty-fifth session).
        // nxg_xp (depthwise, every tap of a vector of groups in a register: a predicate per tap
        // and position cost a branch each, 0.46-0.65x): the taps of the few rows, planes and
        // columns at the ends that reach past x read x there instead of zeros, and those
        // products are summed again and subtracted (the frame, below); strided along x, the
        // columns at the ends are the frame's alone (first_x, last_x). Staged with its zero
        // border (nxg), x's copy was a pass of its own that waited on memory (perf: 30 % of
        // mb_dw32_112's call). (Read through its zero padding along x, Halide's partition of
        // a row's positions left LLVM copying the tile's accumulators from one loop to the
        // next and spilling one, 18 copies a position; without the partition, the tests cost
        // more than the copy saved.)
        Func x_clamped;  // (nxg_xp's frame: x read at any index along x)
        if (s.x_in_place) {
            Var c, x_, y, z, g, n_;
            const Expr at[3] = {x_, y, z};
            // NXC leaves the positions whose tap falls outside x out of the reduction (its
            // predicate, below), so its reads of x are inside x by construction.
            const bool reads_predicated = lay == Layout::NXC;
            Expr inside[3];
            for (int a = 0; a < 3; a++) {
                // nxg_xp: along a strided axis (y and z; x below), an index past x is reflected
                // at x's edge (-1 reads 1), a pixel the same tap reads at another position where
                // the stride is 2 (the same parity), so that an infinity or NaN in x reaches only
                // the taps whose true sums it reaches (kernel_registry.h: at most stride 2).
                // (Clamped to the edge, a stride-2 tap that never reads the edge made inf - inf
                // = NaN of it; with unit strides the clamp is such a pixel, and the tiles'
                // stride-1 branches keep it: the reflection cost the 1-vector tiles 0.85x.) The
                // clamp keeps reflections of indices more than a plane past x inside it.
                Expr i = at[a];
                if (lay == Layout::NXG && a > 0) {
                    i = Halide::select(ax[a].stride == 1, i, Halide::min(Halide::max(i, -i), 2 * (x_extent[a] - 1) - i));
                }
                // (Predicated reads: promised, not clamped. Clamped, each position's broadcasts
                // took a clamp of the index (cmov, sar, andn) besides the predicate's test;
                // kernel alone on a Zen 5, rn50_1x1_56 1.05x, rn50_3x3s2_28 1.12x:
                // bench/RESULTS.md, sixty-eighth session.)
                inside[a] = reads_predicated ? Halide::unsafe_promise_clamped(i, 0, x_extent[a] - 1)
                                             : Halide::clamp(i, 0, x_extent[a] - 1);
            }
            s.x_in = Func("x_in");
            if (lay == Layout::NXG) {
                // Strided along x, the reduction's columns read inside x (above): no clamp, so
                // that a tile's addresses step by a constant. (The reflection at both ends,
                // the clamp and the multiply by x's column stride per column and position held
                // the stride-2 tiles to 0.7x of their JIT kernel, whose constants let LLVM drop
                // them.) The frame reads x clamped (its columns outside the reduction's only
                // inside x, by their predicate).
                const Expr last = x_extent[0] - 1;
                const Expr column = Halide::select(ax[0].stride == 1, inside[0], Halide::unsafe_promise_clamped(x_, 0, last));
                s.x_in(c, x_, y, z, g, n_) = widen(x(c, column, inside[1], inside[2], g, n_));
                x_clamped = Func("x_clamped");
                x_clamped(c, x_, y, z, g, n_) = widen(x(c, inside[0], inside[1], inside[2], g, n_));
            } else {
                s.x_in(c, x_, y, z, g, n_) = widen(x(c, inside[0], inside[1], inside[2], g, n_));
            }
            if (reads_predicated) {
                // Each axis's predicate as bounds on its output position, o in [ceil((pad - k*d)
                // / s), ceil((X + pad - k*d) / s)), each `likely`: Halide then tightens the
                // reduction's loops to them (r$x.rebased), and a row's loop over positions
                // holds no test. (As a test of the index, i >= 0 && i < X, every position took
                // two compares and branches, and the loop two back-edges. Kernel alone on a
                // Zen 5 the change measured within the noise, rn50_1x1_56 0.96-1.12x,
                // rn50_3x3s2_28 0.99-1.10x: the loop waits on its loads, not on issue;
                // bench/RESULTS.md, sixty-ninth session.)
                for (int a = 0; a < 3; a++) {
                    const Expr from = ax[a].pad_begin - k[a] * ax[a].dilation;
                    s.r.where(Halide::likely(o[a] >= ceil_div(from, ax[a].stride)) &&
                              Halide::likely(o[a] < ceil_div(x_extent[a] + from, ax[a].stride)));
                }
            }
        }
        s.acc = Func("acc");
        s.acc(s.ci, s.co, s.kx, s.ky, s.kz, s.g) = Halide::cast(at, 0);
        s.acc(s.ci, s.co, s.kx, s.ky, s.kz, s.g) +=
            s.x_in(s.ci, i[0], i[1], i[2], s.g, n) * s.dy_in(s.co, o[0], o[1], o[2], s.g, n);

        Expr sum = s.acc(s.ci, s.co, s.kx, s.ky, s.kz, s.g);
        if (frame) {
            // The products of the taps that read past x, summed apart and subtracted: along
            // each axis, for tap k, the first `before` output rows (planes, columns) and the
            // last `after`, in the reduction's columns. Rows first (every such column of such
            // a row), then planes (in rows inside x), then columns (in rows and planes
            // inside), so no product is counted twice. Each is a reduction over its axis's
            // positions counted from their end, whose predicate `j < count` Halide trims the
            // loop to (a tap's few rows, not a test per row). Then, added, the products of the
            // columns outside the reduction's whose taps read inside x (every row and plane).
            Expr before[3], after[3];
            for (int a = 0; a < 3; a++) {
                const AxisParams &p = ax[a];
                before[a] = Halide::clamp(ceil_div(p.pad_begin - k[a] * p.dilation, p.stride), 0, out[a]);
                after[a] = Halide::clamp(out[a] - ceil_div(x_extent[a] + p.pad_begin - k[a] * p.dilation, p.stride), 0, out[a]);
            }
            s.frame = Func("frame");
            s.frame(s.ci, s.co, s.kx, s.ky, s.kz, s.g) = Halide::cast(at, 0);
            for (const int a : {1, 2, 0, 3}) {  // (3: the columns outside the reduction's)
                for (const bool from_end : {false, true}) {
                    const int along = a % 3;  // the axis counted from its end
                    // Its columns: the reduction's (rows, planes, and the columns at the ends
                    // counted from `first` past those it leaves out at that end), or those
                    // left out (a == 3).
                    const Expr left_out = from_end ? last_x : first_x;  // (at this end)
                    Expr first = first_x, columns = out[0] - first_x - last_x;
                    if (a == 0) first = left_out;
                    if (a == 3) first = 0, columns = left_out;
                    RDom f({{first, columns}, {0, out[1]}, {0, out[2]}, {0, dy.dim(kN).extent()}},
                           "f" + std::to_string(s.frame.num_update_definitions()));
                    Expr fo[3] = {f[0], f[1], f[2]};
                    if (from_end) fo[along] = out[along] - 1 - f[along];
                    Expr fi[3];
                    for (int b = 0; b < 3; b++) fi[b] = fo[b] * ax[b].stride - ax[b].pad_begin + k[b] * ax[b].dilation;
                    Expr condition = Halide::Internal::const_true();
                    if (a == 3) {
                        for (int b = 0; b < 3; b++) condition = condition && fi[b] >= 0 && fi[b] < x_extent[b];
                    } else {
                        condition = f[a] < (from_end ? after[a] : before[a]);
                        for (const int inside : {1, 2}) {  // the axes done before this one
                            if (inside == a) break;
                            condition = condition && f[inside] >= before[inside] && f[inside] < out[inside] - after[inside];
                        }
                    }
                    f.where(condition);
                    const Expr product = x_clamped(s.ci, fi[0], fi[1], fi[2], s.g, f[3]) * s.dy_in(s.co, fo[0], fo[1], fo[2], s.g, f[3]);
                    if (a == 3) {
                        s.frame(s.ci, s.co, s.kx, s.ky, s.kz, s.g) -= product;
                    } else {
                        s.frame(s.ci, s.co, s.kx, s.ky, s.kz, s.g) += product;
                    }
                }
            }
            sum -= s.frame(s.ci, s.co, s.kx, s.ky, s.kz, s.g);
        }
        dw(s.ci, s.co, s.kx, s.ky, s.kz, s.g) = narrow(sum);
        s.dw = dw;

        constrain_activation_strides(x, lay);
        constrain_activation_strides(dy, lay);
        constrain_filter_strides(dw, lay);
        // (x_blocks: dw's input channels are x's, one symbol, so that the tile branches'
        // conditions on them simplify the blocks' indices.)
        if (s.x_block > 0) dw.dim(kCi).set_extent(x.dim(kC).extent());
        apply_fixed_problem();

        s.unit_stride = unit_stride();
        s.stride_x = ax[0].stride;
        s.dilation_x = ax[0].dilation;
        s.tuned = schedule_params();
        s.co_extent = dw.dim(kCo).extent();
        s.ci_extent = dw.dim(kCi).extent();
        s.g_extent = dw.dim(kFg).extent();
        s.kx_extent = dw.dim(kKx).extent();
        s.ky_extent = dw.dim(kKy).extent();
        s.kz_extent = dw.dim(kKz).extent();
        s.x_g_stride = x.dim(kG).stride();
        s.dy_g_stride = dy.dim(kG).stride();
        s.dw_co_stride = dw.dim(kCo).stride();
        s.dw_ci_stride = dw.dim(kCi).stride();
        s.dw_g_stride = dw.dim(kFg).stride();
        s.oy_extent = dy.dim(kY).extent();
        s.ox_extent = dy.dim(kX).extent();
        s.reduction_rows = s.oy_extent * dy.dim(kZ).extent() * dy.dim(kN).extent();
        // In float: the products overflow 32 bits on large layers.
        const auto f = [](const Expr &e) { return Halide::cast<float>(e); };
        const float bytes = float(at.bytes());
        const Expr x_row = f(x.dim(kX).extent()) * f(x.dim(kC).extent() * x.dim(kG).extent()) * f(ax[1].stride);
        const Expr dy_row = f(dy.dim(kX).extent()) * f(dy.dim(kC).extent() * dy.dim(kG).extent());
        s.row_bytes = (x_row + dy_row) * bytes;
        if (autoscheduled()) {
            // Halide's autoscheduler schedules the pipeline (JIT experiments)
        } else if (get_target().has_gpu_feature()) {
            schedule_bwd_weights_gpu(s, get_target(), lay);
        } else {
            schedule_bwd_weights_cpu(s, get_target(), lay);
            if (lay == Layout::NCG || s.rows_pass) {
                get_pipeline().add_custom_lowering_pass(new TransposedRows);
            }
            if ((lay == Layout::NXC || s.dy_broadcasts) && !s.small_groups && !s.staged_inputs && !whole_reduction) {
                // Where dy streams from memory, the first tiles over each chunk prefetch the
                // next co block's dy (next_tile_prefetch.h).
                add_next_tile_prefetch(get_pipeline(), get_target(), *get_externs_map(), bt.bytes(), kFilterGradientTiles);
            }
            // nxc_wr's tiles store dw's lines whole, once each: a large dw is streamed
            // (streaming_stores.h).
            if (whole_reduction) add_streaming_stores(get_pipeline(), get_target(), *get_externs_map());
            // nxg_gt's tiles prefetch the next image's dy (next_image_prefetch.h).
            if (s.group_tasks) add_next_image_prefetch(get_pipeline(), get_target(), *get_externs_map(), bt.bytes());
        }
    }

private:
    // The JIT's exact problem (`fixed`), if given: every buffer's extents and strides become
    // constants (generator_common.h: FixedProblem).
    void apply_fixed_problem() {
        const FixedProblem fixed = fixed_problem();
        fixed.apply(*x_, "x");
        fixed.apply(*dy_, "dy");
        fixed.apply(*dw_, "dw");
    }

    // The flat-plane variant: dw[kx, ky, g] = the sum over positions p of dy's plane (and
    // images) where x's row and column at tap (kx, ky) are inside its plane of
    //   dy[g * P_dy + p] * x[g * P_x + p + (ky * d_y - pad_y) * W + kx * d_x - pad_x],
    // each image's planes read as one row (generators/flat_planes.h).
    void generate_flat_planes() {
        auto &x = *x_;
        auto &dy = *dy_;
        auto &dw = *dw_;
        if (variant_layout() != Layout::NCG || dy_broadcasts || small_groups || staged_dy ||
            get_target().has_gpu_feature()) {
            throw std::invalid_argument("convgrad: flat_planes is a CPU variant of layout=ncg alone");
        }
        const Type at = accumulator();
        const Type bits = UInt(at.bits());
        const std::array<AxisParams, 3> ax = axes();
        FlatPlaneFilterStages s;
        const int lanes = get_target().natural_vector_size(at);
        const Expr width = flat_row_width(x);
        const Expr x_plane = x.dim(kG).stride(), dy_plane = dy.dim(kG).stride();
        const Expr groups = x.dim(kG).extent();
        const Expr vectors = (dy_plane + lanes - 1) / lanes;
        // Each image's planes as one row, and the same read through zeros past its ends.
        Var j("j"), n("n");
        Func x_row("x_row"), dy_row("dy_row");
        x_row(j, n) = widen(x(0, j, 0, 0, 0, n));
        dy_row(j, n) = widen(dy(0, j, 0, 0, 0, n));
        const Func x_edge = BoundaryConditions::constant_exterior(x_row, Halide::cast(at, 0), {{0, groups * x_plane}, Range()});
        const Func dy_edge = BoundaryConditions::constant_exterior(dy_row, Halide::cast(at, 0), {{0, groups * dy_plane}, Range()});
        s.rn = RDom(0, dy.dim(kN).extent(), "rn");
        s.rv = RDom(0, vectors, "rv");
        s.rl = RDom(0, lanes, "rl");
        const Expr p = s.v * lanes + s.l;
        const Expr offset = (s.ky * ax[1].dilation - ax[1].pad_begin) * width + s.kx * ax[0].dilation - ax[0].pad_begin;
        const auto products = [&](const Func &xs, const Func &dys, const Expr &group) {
            return dys(group * dy_plane + p, s.rn) * xs(group * x_plane + p + offset, s.rn);
        };
        // Position p of dy's plane reads x's row p / W + ky * d_y - pad_y, column p % W + ...
        const Expr row = flat_plane_row(p, width);
        const Expr iy = row + s.ky * ax[1].dilation - ax[1].pad_begin;
        const Expr ix = p - row * width + s.kx * ax[0].dilation - ax[0].pad_begin;
        s.mask = Func("mask");
        s.mask(s.l, s.v, s.kx, s.ky) =
            select(p < dy_plane && iy >= 0 && iy < x_plane / width && ix >= 0 && ix < width, bits.max(), Halide::cast(bits, 0));
        const auto chain = [&](Func &part, Func &lane_sums, Func &sum, const std::string &prefix, const Func &xs,
                               const Func &dys, const Expr &group, const Var &gv) {
            part = Func(prefix + "part");
            part(s.l, s.v, s.kx, s.ky, gv) = Halide::cast(at, 0);
            part(s.l, s.v, s.kx, s.ky, gv) += products(xs, dys, group);
            lane_sums = Func(prefix + "lanes");
            lane_sums(s.l, s.kx, s.ky, gv) = Halide::cast(at, 0);
            lane_sums(s.l, s.kx, s.ky, gv) +=
                reinterpret(at, reinterpret(bits, part(s.l, s.rv, s.kx, s.ky, gv)) & s.mask(s.l, s.rv, s.kx, s.ky));
            sum = Func(prefix + "sum");
            sum(s.kx, s.ky, gv) = Halide::cast(at, 0);
            sum(s.kx, s.ky, gv) += lane_sums(s.rl, s.kx, s.ky, gv);
        };
        chain(s.part, s.lanes, s.sum, "", x_row, dy_row, s.g, s.g);
        chain(s.edge_part, s.edge_lanes, s.edge_sum, "edge_", x_edge, dy_edge, s.e * (groups - 1), s.e);
        // (What the registry promises, checked once per call: a kernel called on another
        // problem fails cleanly instead of reading the wrong positions.)
        const Expr ok = unit_stride() && x.dim(kY).stride() == dy.dim(kY).stride() && groups >= 3 &&
                        dy.dim(kG).extent() == groups && x.dim(kX).extent() == groups * x_plane &&
                        dy.dim(kX).extent() == groups * dy_plane && x_plane % width == 0;
        Var ci("ci"), co("co"), kz("kz");
        const Expr interior = s.g >= 1 && s.g < groups - 1;
        dw(ci, co, s.kx, s.ky, kz, s.g) = narrow(require(
            ok,
            select(interior, s.sum(s.kx, s.ky, clamp(s.g, 1, groups - 2)), s.edge_sum(s.kx, s.ky, select(s.g == 0, 0, 1))),
            "convgrad: the flat-plane filter gradient takes unit strides, x and dy of one width, dense planes and 3 groups or more"));
        s.dw = dw;

        constrain_flat_plane_buffers(x, dy, dw);
        apply_fixed_problem();
        s.g_extent = dw.dim(kFg).extent();
        s.kx_extent = dw.dim(kKx).extent();
        s.ky_extent = dw.dim(kKy).extent();
        s.tuned = schedule_params();
        if (!autoscheduled()) schedule_bwd_weights_cpu_flat(s, get_target());
    }

    // The Winograd variant (generators/winograd.h). Tiles of dy are numbered flat over (tile
    // x, tile y, image); blocks are runs of them, chunks runs of blocks.
    void generate_winograd() {
        auto &x = *x_;
        auto &dy = *dy_;
        auto &dw = *dw_;
        const Layout lay = variant_layout();
        if ((lay != Layout::NXC && lay != Layout::NCX) || dy_broadcasts || small_groups || staged_dy ||
            get_target().has_gpu_feature()) {
            throw std::invalid_argument("convgrad: winograd is a CPU variant of layout=nxc or ncx alone");
        }
        constexpr int m = kWinogradTile, alpha = kWinogradInput;
        const Type acc_t = accumulator();
        const auto matrix_rows = winograd_rows_in(acc_t);
        // A = (A^T)^T, 6x4: dy's 4x4 tile to 6x6.
        double a_mat[alpha][m];
        for (int i = 0; i < alpha; i++) {
            for (int j = 0; j < m; j++) a_mat[i][j] = kWinogradAT[j][i];
        }
        // G^T, 3x6: the 6x6 sums to the 3x3 taps.
        double gt[3][alpha];
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < alpha; j++) gt[i][j] = kWinogradG[j][i];
        }
        WinogradFilterStages s;
        s.tuned = schedule_params();
        s.channels_first = lay == Layout::NCX;
        const std::array<AxisParams, 3> ax = axes();
        const Expr tiles_x = (dy.dim(kX).extent() + m - 1) / m, tiles_y = (dy.dim(kY).extent() + m - 1) / m;
        // 3-D layers: tiles of each depth slice of dy (the slices, then the images, outermost
        // in the flat order); depth tap kz of dy's slice z reads x's slice z + kz - pz,
        // directly, transformed per block and tap. (With the slices innermost, blocks spanning
        // columns of places over every slice, each x tile was transformed about once, not once
        // per tap, but each tile's rows of x and dy were a slice apart: u3d_3x3x3_32 1.00x.)
        const Expr slices = dy.dim(kZ).extent(), images = dy.dim(kN).extent();
        const Expr tiles = tiles_x * tiles_y * slices * images;
        // (Tiles past the last, in the last block, read the last slice again; their dy
        // transform is zero.)
        const WinogradTile plane_t = winograd_tile(s.t, tiles_x, tiles_y, slices * images);
        const Expr tile_z = plane_t.n % slices, tile_n = plane_t.n / slices;
        // The transforms vectorise channels: NCX's, planes apart, are first copied channels
        // innermost, x and dy whole (a block of 32 tiles spans parts of up to three tile
        // rows, and of two images: per-block copies of their rows would copy much more).
        Func x_in, dy_in;
        if (s.channels_first) {
            s.x_copy = widened(x, "x_copy");
            s.dy_copy = widened(dy, "dy_copy");
            x_in = zero_padded_copy(s.x_copy, x);
            dy_in = zero_padded_copy(s.dy_copy, dy);
        } else {
            x_in = zero_padded(x, "x_in");
            dy_in = zero_padded(dy, "dy_in");
        }
        // x's 6x6 tile of dy's tile starts at dy's origin - pb along each axis.
        s.vx_rows(s.ci, s.a, s.nu, s.t, s.kz, s.g) = matrix_rows(s.nu, &kWinogradBT[0][0], alpha, alpha, [&](int b) {
            return x_in(s.ci, plane_t.x * m - ax[0].pad_begin + b, plane_t.y * m - ax[1].pad_begin + s.a,
                        tile_z + s.kz - ax[2].pad_begin, s.g, tile_n);
        });
        s.vx(s.ci, s.nu, s.xi, s.t, s.kz, s.g) = matrix_rows(
            s.xi, &kWinogradBT[0][0], alpha, alpha, [&](int a) { return s.vx_rows(s.ci, a, s.nu, s.t, s.kz, s.g); });
        s.wy_rows(s.co, s.a, s.nu, s.t, s.g) =
            select(s.t < tiles, matrix_rows(s.nu, &a_mat[0][0], alpha, m, [&](int j) {
                       return dy_in(s.co, plane_t.x * m + j, plane_t.y * m + s.a, tile_z, s.g, tile_n);
                   }),
                   Halide::cast(acc_t, 0));
        s.wy(s.co, s.nu, s.xi, s.t, s.g) = matrix_rows(s.xi, &a_mat[0][0], alpha, m,
                                                       [&](int a) { return s.wy_rows(s.co, a, s.nu, s.t, s.g); });
        // Blocks of block_tiles() tiles; chunks of blocks, reduced in parallel: at most 4 (8 and
        // 2 ran rn50_3x3_56 0.9x, kernel alone), and their partial sums (36 x C_in x C_out
        // each) within 16 MB.
        const int tiles_per_block = s.block_tiles();
        const Expr blocks = (tiles + tiles_per_block - 1) / tiles_per_block;
        // (3-D layers: counted at the most depth taps. dw's own extent is not known before dw is
        // defined, which reads these sums.)
        const Expr depth_taps = select(x.dim(kZ).extent() > 1 || slices > 1, kWinogradMaxDepthTaps, 1);
        const Expr sum_bytes =
            alpha * alpha * depth_taps * x.dim(kC).extent() * dy.dim(kC).extent() * static_cast<int>(acc_t.bytes());
        const Expr chunks = clamp(min(blocks, (16 << 20) / max(sum_bytes, 1)), 1, s.tuned.get("wg_chunks", 4));
        const Expr blocks_per_chunk = (blocks + chunks - 1) / chunks;
        s.r_tile = RDom(0, tiles_per_block, "r_tile");
        s.r_block = RDom(0, blocks_per_chunk, "r_block");
        s.r_chunk = RDom(0, chunks, "r_chunk");
        s.chunks = chunks;
        const Expr t = s.b * tiles_per_block + s.r_tile;
        s.block(s.ci, s.co, s.nu, s.xi, s.kz, s.g, s.b) = Halide::cast(acc_t, 0);
        s.block(s.ci, s.co, s.nu, s.xi, s.kz, s.g, s.b) +=
            s.vx(s.ci, s.nu, s.xi, t, s.kz, s.g) * s.wy(s.co, s.nu, s.xi, t, s.g);
        s.part(s.ci, s.co, s.nu, s.xi, s.kz, s.g, s.k) = Halide::cast(acc_t, 0);
        s.part(s.ci, s.co, s.nu, s.xi, s.kz, s.g, s.k) +=
            s.block(s.ci, s.co, s.nu, s.xi, s.kz, s.g, s.k * blocks_per_chunk + s.r_block);
        s.sums(s.ci, s.co, s.nu, s.xi, s.kz, s.g) = Halide::cast(acc_t, 0);
        s.sums(s.ci, s.co, s.nu, s.xi, s.kz, s.g) += s.part(s.ci, s.co, s.nu, s.xi, s.kz, s.g, s.r_chunk);
        s.dw_rows(s.ci, s.co, s.kx, s.xi, s.kz, s.g) = matrix_rows(
            s.kx, &gt[0][0], 3, alpha, [&](int nu) { return s.sums(s.ci, s.co, nu, s.xi, s.kz, s.g); });
        // (Unit strides and dilations are the registry's promise: checked once per call's
        // final transform, so a kernel called on another problem fails cleanly.)
        const Expr unit = unit_stride() && unit_dilation();
        dw(s.ci, s.co, s.kx, s.ky, s.kz, s.g) =
            narrow(require(unit, matrix_rows(s.ky, &gt[0][0], 3, alpha, [&](int xi) { return s.dw_rows(s.ci, s.co, s.kx, xi, s.kz, s.g); }),
                           "convgrad: the Winograd filter gradient takes unit strides and dilations"));
        s.dw = dw;

        constrain_winograd_buffers(x, dy, dw, lay);
        apply_fixed_problem();
        s.ci_extent = x.dim(kC).extent();
        s.co_extent = dy.dim(kC).extent();
        s.x_x_stride = x.dim(kX).stride();
        s.dy_x_stride = dy.dim(kX).stride();
        if (!autoscheduled()) {
            schedule_bwd_weights_cpu_winograd(s, get_target());
            if (s.channels_first) get_pipeline().add_custom_lowering_pass(new TransposedRows);
        }
    }

    GeneratorInput<Buffer<>> *x_ = nullptr;
    GeneratorInput<Buffer<>> *dy_ = nullptr;
    GeneratorOutput<Buffer<>> *dw_ = nullptr;
};

}  // namespace
}  // namespace convgrad::gen

HALIDE_REGISTER_GENERATOR(convgrad::gen::BwdWeights, convgrad_bwd_weights)
