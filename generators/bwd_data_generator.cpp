// Data gradient (backprop-input, transposed convolution), written once for every rank,
// layout, grouping and dtype:
//
//   dx[c, i, g, n] = sum over (co, k) with i == o*s - pb + k*d of  dy[co, o, g, n] * w[c, co, k, g]
//
// i.e. for each input position i and tap k, the output position o = (i + pb - k*d) / s when
// that division is exact and o is in range; otherwise the term is a structural zero.
#include "bwd_data.h"
#include "flat_planes.h"
#include "next_tile_prefetch.h"
#include "streaming_stores.h"
#include "transposed_rows.h"
#include "winograd.h"

namespace convgrad::gen {
namespace {

using namespace canonical;

class BwdData : public ConvGradGenerator<BwdData> {
public:
    // 2: the variant for stride 2 along x (the registry routes only such problems, with an
    // even dx width, to it): dx is written through its x-phase view (canonical.h), so each
    // tile covers pixels of one phase, which all take the same taps.
    GeneratorParam<int> x_phases{"x_phases", 1, 1, 2};
    // true: the variant for few input channels (at most kPixelVectorChannels per group, NXC),
    // vectorised over pixels (schedules/cpu_bwd_data_pixels.cpp).
    GeneratorParam<bool> pixel_vectors{"pixel_vectors", false};
    // true: the variant for small groups (NXC, fewer than kSmallGroupChannels dy channels per
    // group; the registry routes no others to it, and the kernel fails cleanly on wider ones).
    GeneratorParam<bool> small_groups{"small_groups", false};
    // Its NXC tiles ran as fast without LLVM's SLP vectorizer (generators/llvm_options.h).
    bool slp_vectorizer_pays() const { return !(small_groups && variant_layout() == Layout::NXC); }
    // true: the flat-plane variant (ncg_fp: depthwise NCHW, unit strides, dx and dy of one
    // width; generators/flat_planes.h), on the runtime's flat views of dy and dx.
    GeneratorParam<bool> flat_planes{"flat_planes", false};
    // true: the channel-slab variant (nxc_cs, ncx_cs: dx channels per group a multiple of
    // kChannelSlab; the registry routes no others to it): the filter is packed in slabs of
    // the tile's width, so each tile's reduction streams one contiguous block of it.
    GeneratorParam<bool> channel_slabs{"channel_slabs", false};
    // true: the pointwise variants (one tap, unit strides, no padding; the registry routes
    // no others to them, over the runtime's flattened positions): nxc_pw (dx channels per
    // group a multiple of kPointwiseSlab; its filter packed in slabs as in channel_slabs, of
    // the pointwise tile's width) and ncx_px_pw (rows of pixel vectors). dx at each position
    // reads dy at the same position, so the tiles read dy in place: no zero border and no
    // staged copy, which for rn50_1x1_56 (3 MB of dy per image, one flattened row) went
    // past the L2 and back.
    GeneratorParam<bool> pointwise{"pointwise", false};
    // true: the Winograd variant (nxc_wg: 2-D 3x3 filters, unit strides and dilations, dx and
    // dy channels per group multiples of kChannelSlab; generators/winograd.h).
    GeneratorParam<bool> winograd{"winograd", false};
    // true: the in-place variant (nxg_ip: NHWC depthwise 3x3 filters, unit strides and
    // dilations; the kernel takes 3x3 filters alone): the tiles read dy in place, through its
    // zero padding, instead of staging each block of rows with its zero border first
    // (schedules/cpu_bwd_data.cpp).
    GeneratorParam<bool> dy_in_place{"dy_in_place", false};

    void configure() {
        const Type t = buffer_type();
        dy_ = add_input<Buffer<>>("dy", t, kActDims);
        w_ = add_input<Buffer<>>("w", t, kFilterDims);
        dx_ = add_output<Buffer<>>("dx", t, x_phases == 2 ? kPhaseActDims : kActDims);
    }

    // The variant, then (x86, channels-last layouts) its large outputs written with
    // streaming stores. Channels first, dx is written row by row (rows of 28 in three
    // vectors and one shifted inwards over them, rows a line apart that share lines), so
    // lines are written in pieces at different times, which streaming stores make
    // partial-line writes to memory: NCHW rx_g32_28's data gradient (ncx_px) took 8.5-9.0 ms
    // instead of 6.4, the depthwise ones (ncg) 5-10 % longer.
    void generate_variant() {
        generate_algorithm();
        const Layout lay = variant_layout();
        if (lay == Layout::NXC || lay == Layout::NXG) add_streaming_stores(get_pipeline(), get_target(), *get_externs_map());
    }

private:
    // The JIT's exact problem (`fixed`), if given: every buffer's extents and strides become
    // constants (generator_common.h: FixedProblem).
    void apply_fixed_problem() {
        const FixedProblem fixed = fixed_problem();
        fixed.apply(*dy_, "dy");
        fixed.apply(*w_, "w");
        fixed.apply(*dx_, "dx");
    }

    void generate_algorithm() {
        if (flat_planes) {
            generate_flat_planes();
            return;
        }
        if (winograd) {
            generate_winograd();
            return;
        }
        auto &dy = *dy_;
        auto &w = *w_;
        auto &dx = *dx_;
        const Type bt = buffer_type(), at = accumulator();
        BwdDataStages s;
        const std::array<AxisParams, 3> ax = axes();

        // The filter as the kernel reads it: in the accumulator type, so a packed copy (see the
        // schedules) converts 16-bit filters once instead of in the inner loop.
        s.w_local = Func("w_local");
        {
            Var ci, co, kx, ky, kz, g;
            s.w_local(ci, co, kx, ky, kz, g) = widen(w(ci, co, kx, ky, kz, g));
        }

        s.tuned = schedule_params();
        s.pointwise = pointwise;
        // Pointwise tiles: NXC's over channel vectors (nxc_pw), NCX's over pixel vectors
        // (ncx_px_pw).
        const bool pointwise_layout = variant_layout() == (pixel_vectors ? Layout::NCX : Layout::NXC);
        if (pointwise && (!pointwise_layout || x_phases == 2 || small_groups || channel_slabs ||
                          get_target().has_gpu_feature())) {
            throw std::invalid_argument("convgrad: pointwise is a CPU variant of layout=nxc, or ncx with pixel_vectors");
        }
        if (pointwise) {
            // In place: every position it reads is one of dx's (the tiles' bounds), inside dy.
            s.dy_in = Func("dy_in");
            Var c, x, y, z, g, n;
            s.dy_in(c, x, y, z, g, n) = widen(dy(c, x, y, z, g, n));
            // One tap: Halide knows it (the reduction has no tap loops) and checks it.
            for (int d : {kKx, kKy, kKz}) w.dim(d).set_bounds(0, 1);
        } else if (pixel_vectors && rows_contiguous(variant_layout())) {
            // Channels-first pixel-vector variants stage whole rows (rows_over_zeros).
            s.dy_in = rows_over_zeros(dy, "dy_in");
        } else {
            s.dy_in = zero_padded(dy, "dy_in");
        }
        if (dy_in_place && (variant_layout() != Layout::NXG || x_phases == 2 || pixel_vectors || bt.bits() == 16 ||
                            get_target().has_gpu_feature())) {
            throw std::invalid_argument(
                "convgrad: dy_in_place is a CPU variant of layout=nxg alone (x_phases=1, no pixel_vectors), "
                "for native float types");
        }
        s.dy_in_place = dy_in_place;
        if (dy_in_place) {
            // 3x3 taps: Halide checks it, and compiles the tiles for those alone.
            w.dim(kKx).set_bounds(0, 3);
            w.dim(kKy).set_bounds(0, 3);
            w.dim(kKz).set_bounds(0, 1);
        }
        // Halide 14 converts 16-bit floats in software on x86 (no F16C): such inputs are
        // converted once per element instead of at every use in the tiles.
        s.staged_inputs = bt.bits() == 16;

        s.r = RDom({{0, w.dim(kCo).extent()}, {0, w.dim(kKx).extent()},
                    {0, w.dim(kKy).extent()}, {0, w.dim(kKz).extent()}}, "r");
        const Expr co = s.r[0];
        const Expr k[3] = {s.r[1], s.r[2], s.r[3]};
        // The x-phase variant: x = 2q + p (s.x is q). 2q is on the stride-2 grid, so the x
        // test and offset depend on p only: (2q + p + pb - k*d) / 2 = q + (p + pb - k*d) / 2.
        s.phased = x_phases == 2;
        s.pixel_vectors = pixel_vectors;
        s.small_groups = small_groups;
        // dx's transposing copy; the pixel-vector variants (vectors along rows) have none.
        s.rows_pass = ncx_rows_pass(bt) && !pixel_vectors;
        if (small_groups && (variant_layout() != Layout::NXC || s.phased || pixel_vectors)) {
            throw std::invalid_argument("convgrad: small_groups is a variant of layout=nxc alone");
        }
        // Depthwise channels-first rows: stride 2 alone (unit strides run faster on ncg).
        if (pixel_vectors && variant_layout() == Layout::NCG && !s.phased) {
            throw std::invalid_argument("convgrad: pixel_vectors with layout=ncg needs x_phases=2");
        }
        const Expr i[3] = {s.phased ? Expr(s.p) : Expr(s.x), s.y, s.z};
        Expr o[3], hit = Internal::const_true();
        for (int a = 0; a < 3; a++) {
            // Halide's / and % round towards -inf, so a negative t lands outside [0, O).
            Expr t = i[a] + ax[a].pad_begin - k[a] * ax[a].dilation;
            const Expr stride = s.phased && a == 0 ? Expr(2) : ax[a].stride;
            o[a] = pointwise ? i[a] : t / stride;  // (pointwise: strides 1, no padding, the registry's promise)
            if (!pointwise) hit = hit && (t % stride == 0);
        }
        if (s.phased) o[0] += s.x;

        // Taps whose output position is not on the stride grid are structural zeros: the
        // predicate skips them (and their whole channel loop) instead of multiplying zeros.
        s.r.where(hit);  // (pointwise: true)
        const std::vector<Var> pure = s.phased ? std::vector<Var>{s.c, s.x, s.p, s.y, s.z, s.g, s.n}
                                               : std::vector<Var>{s.c, s.x, s.y, s.z, s.g, s.n};
        s.acc = Func("acc");
        s.dx_local = Func("dx_local");
        // The small-group variant's x86 form for native types: groups in pairs (bwd_data.h).
        // (16-bit types stage dy whole before the tiles; Halide 14's ARM backend computed
        // wrong filter gradients with the same nested vectors: see bwd_weights_generator.cpp.)
        s.pairs = small_groups && get_target().arch == Target::X86 && bt.bits() >= 32;
        if (s.pairs) {
            s.dy_pairs = group_pairs(s.dy_in, "dy_pairs");
            s.w_pairs = Func("w_pairs");
            Var ci_, co_, kx_, ky_, kz_;
            s.w_pairs(s.gpar, ci_, co_, kx_, ky_, kz_, s.gp) = s.w_local(ci_, co_, kx_, ky_, kz_, s.gp * 2 + s.gpar);
            const std::vector<Var> in_pairs = {s.gpar, s.c, s.x, s.y, s.z, s.gp, s.n};
            s.acc(in_pairs) = Halide::cast(at, 0);
            s.acc(in_pairs) += s.dy_pairs(s.gpar, co, o[0], o[1], o[2], s.gp, s.n) *
                               s.w_pairs(s.gpar, s.c, co, k[0], k[1], k[2], s.gp);
            s.dx_local(pure) = narrow(s.acc(s.g % 2, s.c, s.x, s.y, s.z, s.g / 2, s.n));
        } else {
            s.acc(pure) = Halide::cast(at, 0);
            // The channel-slab variant reads the filter packed in slabs of `slab` dx channels (the
            // tile's width: the tiles start on a slab), each slab's output channels and taps
            // contiguous. Packed with every dx channel innermost, a tile's steps along co are
            // C_in apart: rn50_1x1_7's 4 MB filter, re-read for every row of dx, took a new pair
            // of lines 8 KB apart per output channel.
            Expr w_read = s.w_local(s.c, co, k[0], k[1], k[2], s.g);
            if (channel_slabs || (pointwise && !pixel_vectors)) {
                const Layout l = variant_layout();
                if ((l != Layout::NXC && l != Layout::NCX) || s.phased || pixel_vectors || small_groups ||
                    get_target().has_gpu_feature()) {
                    throw std::invalid_argument("convgrad: channel_slabs is a CPU variant of layout=nxc or ncx alone");
                }
                s.slab = s.tile_vectors(get_target()) * get_target().natural_vector_size(at);
                const int slabs_of = pointwise ? kPointwiseSlab : kChannelSlab;
                if (slabs_of % s.slab != 0) {
                    throw std::invalid_argument("convgrad: a tile of " + std::to_string(s.slab) +
                                                " channels does not divide the registry's slab of " +
                                                std::to_string(slabs_of));
                }
                Var ci_i, co_, kx_, ky_, kz_, ci_o, g_;
                s.w_pack = Func("w_pack");
                // (Clamped: the last slab of a group reads past its channels only where the
                // predicate is broken; the kernel's tiles never use those lanes. Unclamped
                // where the slabs are whole, so that the schedule's branch for them loads
                // OIX's contiguous input channels as vectors, not lane by lane.)
                const Expr channel = ci_o * s.slab + ci_i;
                s.whole_slabs = w.dim(kCi).extent() % s.slab == 0;
                s.w_ci_stride = w.dim(kCi).stride();
                s.w_pack(ci_i, co_, kx_, ky_, kz_, ci_o, g_) = s.w_local(
                    select(s.whole_slabs, channel, Halide::min(channel, w.dim(kCi).extent() - 1)), co_, kx_, ky_, kz_, g_);
                w_read = s.w_pack(s.c % s.slab, co, k[0], k[1], k[2], s.c / s.slab, s.g);
            }
            s.acc(pure) += s.dy_in(co, o[0], o[1], o[2], s.g, s.n) * w_read;
            s.dx_local(pure) = narrow(s.acc(pure));
        }
        dx(pure) = s.dx_local(pure);
        s.dx = dx;

        const Layout lay = variant_layout();
        constrain_activation_strides(dy, lay);
        constrain_activation_strides(dx, lay, dx.dimensions());
        constrain_filter_strides(w, lay);
        apply_fixed_problem();

        s.unit_stride = unit_stride();
        s.stride_2 = stride_2d(2);
        s.unit_dilation = unit_dilation();
        s.c_extent = dx.dim(kC).extent();
        s.x_extent = dx.dim(kX).extent();  // q's extent in the x-phase variant
        s.y_extent = dx.dim(s.phased ? kY + 1 : kY).extent();
        s.g_extent = dx.dim(dx.dimensions() - 2).extent();
        s.n_extent = dx.dim(dx.dimensions() - 1).extent();
        s.kx_extent = w.dim(kKx).extent();
        s.ky_extent = w.dim(kKy).extent();
        s.kz_extent = w.dim(kKz).extent();
        s.dy_g_stride = dy.dim(kG).stride();
        s.w_co_stride = w.dim(kCo).stride();
        if (autoscheduled()) {
            // Halide's autoscheduler schedules the pipeline (JIT experiments)
        } else if (get_target().has_gpu_feature()) {
            schedule_bwd_data_gpu(s, get_target(), lay);
        } else {
            schedule_bwd_data_cpu(s, get_target(), lay);
            // (NXC: the HWIO filter's packing, schedules/cpu_bwd_data.cpp.)
            if ((lay == Layout::NCG || lay == Layout::NXC || s.rows_pass) && !pixel_vectors) {
                get_pipeline().add_custom_lowering_pass(new TransposedRows);
            }
            // Pointwise tiles read dy in place: where it streams from memory, the first tiles
            // over each block of pixels prefetch the next one's (next_tile_prefetch.h).
            if (pointwise && (lay == Layout::NXC || pixel_vectors)) {
                add_next_tile_prefetch(get_pipeline(), get_target(), *get_externs_map(), bt.bytes(),
                                       kPointwiseDataGradientTiles);
            }
        }
    }

    // The flat-plane variant: dx[i] = sum over kx where dx's column i % W reads inside dy's
    // row of  sum over ky of  w[kx, ky] * dy[i + pad_x - kx*d_x + (pad_y - ky*d_y) * W].
    void generate_flat_planes() {
        auto &dy = *dy_;
        auto &w = *w_;
        auto &dx = *dx_;
        if (variant_layout() != Layout::NCG || x_phases == 2 || pixel_vectors || small_groups ||
            get_target().has_gpu_feature()) {
            throw std::invalid_argument("convgrad: flat_planes is a CPU variant of layout=ncg alone");
        }
        const Type at = accumulator();
        const std::array<AxisParams, 3> ax = axes();
        FlatPlaneDataStages s;
        const Expr width = flat_row_width(dy);
        s.dy_in = flat_plane(dy, "dy_in");
        s.w_local = Func("w_local");
        s.w_local(s.kx, s.ky, s.g) = widen(w(0, 0, s.kx, s.ky, 0, s.g));
        // dx's column x reads dy's column x + pad_x - kx*d_x.
        s.col_ok = column_test("col_ok", width, [&](const Expr &x, const Expr &k) {
            const Expr t = x + ax[0].pad_begin - k * ax[0].dilation;
            return t >= 0 && t < width;
        });
        s.rkx = RDom(0, w.dim(kKx).extent(), "rkx");
        s.rky = RDom(0, w.dim(kKy).extent(), "rky");
        const Expr shift_x = ax[0].pad_begin - s.kx * ax[0].dilation;
        const Expr shift_y = (ax[1].pad_begin - s.rky * ax[1].dilation) * width;
        s.part = Func("part");
        s.part(s.i, s.kx, s.g, s.n) = Halide::cast(at, 0);
        s.part(s.i, s.kx, s.g, s.n) += s.w_local(s.kx, s.rky, s.g) * s.dy_in(s.i + shift_x + shift_y, s.g, s.n);
        s.acc = Func("acc");
        s.acc(s.i, s.g, s.n) = Halide::cast(at, 0);
        s.acc(s.i, s.g, s.n) += select(s.col_ok(s.i, s.rkx), s.part(s.i, s.rkx, s.g, s.n), Halide::cast(at, 0));
        dx(s.c, s.i, s.y, s.z, s.g, s.n) = narrow(s.acc(s.i, s.g, s.n));
        s.dx = dx;

        constrain_flat_plane_buffers(dy, dx, w);
        apply_fixed_problem();

        s.plane = dx.dim(kX).extent();
        s.g_extent = w.dim(kFg).extent();
        s.kx_extent = w.dim(kKx).extent();
        s.ky_extent = w.dim(kKy).extent();
        s.unit_dilation = unit_dilation();
        s.tuned = schedule_params();
        if (!autoscheduled()) schedule_bwd_data_cpu_flat(s, get_target());
    }

    // The Winograd variant (generators/winograd.h). Tiles are numbered flat over (tile x,
    // tile y, image), so a block of whole tile rows is one run of them.
    void generate_winograd() {
        auto &dy = *dy_;
        auto &w = *w_;
        auto &dx = *dx_;
        const Layout lay = variant_layout();
        if ((lay != Layout::NXC && lay != Layout::NCX) || x_phases == 2 || pixel_vectors || small_groups ||
            channel_slabs || pointwise || get_target().has_gpu_feature()) {
            throw std::invalid_argument("convgrad: winograd is a CPU variant of layout=nxc or ncx alone");
        }
        constexpr int m = kWinogradTile, alpha = kWinogradInput;
        const Type acc_t = accumulator();
        const auto matrix_rows = winograd_rows_in(acc_t);
        const double *bt = &kWinogradBT[0][0], *gm = &kWinogradG[0][0], *at = &kWinogradAT[0][0];
        WinogradDataStages s;
        s.tuned = schedule_params();
        s.channels_first = lay == Layout::NCX;
        const std::array<AxisParams, 3> ax = axes();
        // The tiles that can be nonzero: dx[i] reads dy from i + pb - 2 on, so past
        // dy's extent + 2 - pb dx is zero (trailing rows that negative pads_end add). Counted
        // from dy, since dx's extents are not known before dx is defined, which reads them.
        const auto tiles_along = [&](int d, const AxisParams &axis) {
            return max((dy.dim(d).extent() + 2 - axis.pad_begin + m - 1) / m, 1);
        };
        s.tiles_x = tiles_along(kX, ax[0]);
        s.tiles_y = tiles_along(kY, ax[1]);
        s.images = dy.dim(kN).extent();
        const WinogradTile tile_t = winograd_tile(s.t, s.tiles_x, s.tiles_y, s.images);
        // dy's 6x6 tile of dx's tile starts at dx's origin + pb - 2 along each axis. The
        // transforms vectorise dy's channels: NCX's are planes apart, so a block's rows of dy
        // are first copied channels innermost (dy_rows, in cache; its zero border is the
        // boundary condition's, read past the copy).
        Func dy_in;
        if (s.channels_first) {
            s.dy_rows = widened(dy, "dy_rows");
            dy_in = zero_padded_copy(s.dy_rows, dy);
        } else {
            dy_in = zero_padded(dy, "dy_in");
        }
        s.v_rows = Func("v_rows");
        s.v_rows(s.co, s.a, s.nu, s.t, s.z, s.g) = matrix_rows(s.nu, bt, alpha, alpha, [&](int b) {
            return dy_in(s.co, tile_t.x * m + ax[0].pad_begin - 2 + b, tile_t.y * m + ax[1].pad_begin - 2 + s.a, s.z, s.g,
                         tile_t.n);
        });
        s.v = Func("v");
        s.v(s.co, s.nu, s.xi, s.t, s.z, s.g) = matrix_rows(
            s.xi, bt, alpha, alpha, [&](int b) { return s.v_rows(s.co, b, s.nu, s.t, s.z, s.g); });
        // The filter staged with dx's channels innermost, as the transforms vectorise it (in
        // HWIO its output channels are: read in place, every vector was a gather, and the
        // filter transform took 25 % of rn50_3x3_14's call).
        s.w_local = Func("w_local");
        s.w_local(s.c, s.co, s.kx, s.ky, s.kz, s.g) = widen(w(s.c, s.co, s.kx, s.ky, s.kz, s.g));
        // The turned filter's transform, of w[2 - kx, 2 - ky].
        s.u_rows = Func("u_rows");
        // (Unit strides and dilations are the registry's promise: checked here, once per call's
        // filter transform, so a kernel called on another problem fails cleanly.)
        const Expr unit = unit_stride() && unit_dilation();
        s.u_rows(s.c, s.co, s.nu, s.ky, s.kz, s.g) = require(
            unit, matrix_rows(s.nu, gm, alpha, 3, [&](int k) { return s.w_local(s.c, s.co, 2 - k, s.ky, s.kz, s.g); }),
            "convgrad: the Winograd data gradient takes unit strides and dilations");
        s.u = Func("u");
        s.u(s.c, s.co, s.nu, s.xi, s.kz, s.g) = matrix_rows(
            s.xi, gm, alpha, 3, [&](int k) { return s.u_rows(s.c, s.co, s.nu, 2 - k, s.kz, s.g); });
        // The products reduce over dy's channels and the depth taps: along depth the
        // gradient is direct, dx[z] = sum over kz of dy[z + pz - kz] * w[kz] (dy zero outside,
        // so the transformed slices past its ends are zeros).
        s.r = RDom(0, dy.dim(kC).extent(), 0, w.dim(kKz).extent(), "r");
        s.m_acc = Func("m_acc");
        s.m_acc(s.c, s.nu, s.xi, s.t, s.z, s.g) = Halide::cast(acc_t, 0);
        s.m_acc(s.c, s.nu, s.xi, s.t, s.z, s.g) +=
            s.u(s.c, s.r.x, s.nu, s.xi, s.r.y, s.g) * s.v(s.r.x, s.nu, s.xi, s.t, s.z + ax[2].pad_begin - s.r.y, s.g);
        s.m = Func("m");
        s.m(s.c, s.nu, s.xi, s.t, s.z, s.g) = s.m_acc(s.c, s.nu, s.xi, s.t, s.z, s.g);
        s.out_rows = Func("out_rows");
        s.out_rows(s.c, s.nu, s.jy, s.t, s.z, s.g) = matrix_rows(
            s.jy, at, m, alpha, [&](int q) { return s.m(s.c, s.nu, q, s.t, s.z, s.g); });
        // (Tiles past the nonzero ones read the last one's, selected away.)
        const Expr tile = min(s.y / m, s.tiles_y - 1) * s.tiles_x + min(s.x / m, s.tiles_x - 1) +
                          s.n * (s.tiles_x * s.tiles_y);
        const Expr value = matrix_rows(s.x % m, at, m, alpha,
                                       [&](int q) { return s.out_rows(s.c, q, s.y % m, tile, s.z, s.g); });
        const std::vector<Var> pure = {s.c, s.x, s.y, s.z, s.g, s.n};
        // NCX: read out channels innermost, then transposed into dx a block at a time.
        s.dx_tiles = s.channels_first ? Func("dx_tiles") : Func(dx);
        s.dx_tiles(pure) = narrow(select(s.x < s.tiles_x * m && s.y < s.tiles_y * m, value, Halide::cast(acc_t, 0)));
        if (s.channels_first) dx(pure) = s.dx_tiles(pure);
        s.dx = dx;

        constrain_winograd_buffers(dy, dx, w, lay);
        apply_fixed_problem();
        s.w_co_stride = w.dim(kCo).stride();
        s.w_kx_stride = w.dim(kKx).stride();
        s.kz_extent = w.dim(kKz).extent();
        s.dy_x_stride = dy.dim(kX).stride();
        s.dx_x_stride = dx.dim(kX).stride();
        if (!autoscheduled()) {
            schedule_bwd_data_cpu_winograd(s, get_target());
            get_pipeline().add_custom_lowering_pass(new TransposedRows);
        }
    }

    GeneratorInput<Buffer<>> *dy_ = nullptr;
    GeneratorInput<Buffer<>> *w_ = nullptr;
    GeneratorOutput<Buffer<>> *dx_ = nullptr;
};

}  // namespace
}  // namespace convgrad::gen

HALIDE_REGISTER_GENERATOR(convgrad::gen::BwdData, convgrad_bwd_data)
