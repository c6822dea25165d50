// CPU schedules of the filter gradient, a GEMM per tap with a long reduction over the batch
// and output positions.
//
// NXC: a register tile of (ci_tile input channels) x (2 vectors of output channels), reduced
//   over one cache-sized chunk of output rows with the accumulators in registers: per
//   position, ci_tile broadcasts of x (staged with its zero border, in blocks of ci_tile
//   channels with each block's pixels contiguous: x_blocks) and 2 vector loads of dy
//   feed 2*ci_tile FMAs. The chunk loop is outermost; within a chunk, threads split the
//   (tile, tap, group) space; the chunks' sums are added in order. Smaller problems: a
//   3-channel tile (RGB stems), one vector of co per ci, a half vector (small groups, where
//   half a vector is 4 lanes or more), then scalars.
// NXG (depthwise): vectors over the groups; the reduction over rows is split into fixed
//   chunks (rfactor) that run in parallel and are summed in a fixed order afterwards.
// NCX, NCG (channels first: x contiguous): the same tiles as NXC and NXG, on copies of x and
//   dy transposed once so the vector dim is innermost (NCHW ran at 0.04x oneDNN with
//   vectors along x in a GEMM tile; ncg's copies transpose by 4x4 blocks in 128-bit lanes,
//   generators/transposed_rows.h, which made ncg 1.6-1.8x faster than the row-vector and
//   flat-plane variants that took wider rows before).
//   Pointwise NCX layers with dy the larger activation take ncx_db: the tile mirrored,
//   vectors of ci from x's copy and dy broadcast in place, so dy is never transposed.
// Any: the NXC fallback without stride assumptions.
// No atomics and no thread-count-dependent splits anywhere: results are deterministic.
#include "../generators/bwd_weights.h"
#include "cpu_staging.h"
#include "cpu_taps.h"

namespace convgrad::gen {

namespace {

// x in blocks of the tile's ci channels (generators/bwd_weights_generator.cpp: x_blocks,
// (ci_i, ci_o, x, y, z, g, n)), each block's pixels contiguous, so a tile's broadcasts over a
// chunk read one dense run; computed once, in parallel over rows, vectors of a block's
// channels. Channels last, copied along each row block by block. Channels first
// (`transpose`), each vector gathers a pixel across the block's planes, and the `vec`
// unrolled pixels after it read the same lines (as stage_vector_dim_innermost's transposes),
// or (blocks of 8 or more, 32-bit) a plain sweep that the TransposedRows pass transposes.
void stage_x_blocks(BwdWeightsStages &s, int vec, bool transpose) {
    const std::vector<Var> a = s.x_blocks.args();
    Var xo("xo"), xi("xi");
    // Channels first with blocks of 8 or 16 (AVX-512 and ARM64 f32; s.x_blocks_swept()): each block's
    // planes swept along x plainly, a loop the TransposedRows pass rewrites into in-lane
    // transposes where whole blocks read plain rows (x_blocks' definition marks the last
    // block's clamp `likely` unneeded, so the loop over blocks is partitioned). Kernel alone,
    // bit-identical, NCHW rx_g32_28 1.08-1.10x, rn50_3x3s2_28 1.04x, the stem 1.02x. With
    // AVX2's blocks of 4, rx_g32_28 ran 0.93x: there the unrolled gathers below stay.
    const bool sweep = s.x_blocks_swept();  // (channels first: rows_pass is ncx's)
    Func f = s.x_blocks;
    f.compute_root().reorder_storage(a[0], a[2], a[3], a[4], a[6], a[1], a[5]);
    // (A specialisation copies the schedule as it stands: each sets its own loops.)
    // (Whole blocks in the first; the guard is for layers with fewer channels than a block.)
    for (Stage st : {f.specialize(s.ci_extent >= s.x_block), Stage(f)}) {
        if (sweep) {
            st.reorder(a[0], a[2], a[1], a[5], a[4], a[3], a[6])
                .vectorize(a[0], s.x_block, TailStrategy::GuardWithIf);
        } else if (transpose) {
            st.split(a[2], xo, xi, vec, TailStrategy::GuardWithIf)
                .reorder(a[0], xi, xo, a[1], a[5], a[4], a[3], a[6])
                .vectorize(a[0], s.x_block, TailStrategy::GuardWithIf)
                .unroll(xi);
        } else {
            st.reorder(a[0], a[2], a[1], a[5], a[4], a[3], a[6]).vectorize(a[0], s.x_block, TailStrategy::GuardWithIf);
        }
        st.parallel(a[6]).parallel(a[3]);
    }
}

// Whether a depthwise tile of two vectors of groups keeps every tap in a register: at most
// 9 taps (18 accumulators) in 32 vector registers (nxg's pixel tiles and nxg_gt's blocks).
Expr two_vector_taps_fit(const BwdWeightsStages &s, const Target &target) {
    return vector_registers(target) == 32 && s.kx_extent * s.ky_extent * s.kz_extent <= 9;
}

// nxg_xp's correction (the taps' products over the rows, planes and columns they read past
// x: a few per image and tap): tiles of groups, in parallel, computed at `at` (dw's block of
// groups) as acc is. Each tap's loops over the positions inside its own, so that Halide
// trims the rows' (planes', columns') loop to those the tap's predicate holds on.
void schedule_frame(BwdWeightsStages &s, const LoopLevel &at, int vec) {
    Func tiles = s.frame.in(s.dw);
    Var t_o("t_o"), t_i("t_i");
    tiles.compute_at(at);
    s.frame.compute_at(tiles, t_o).reorder_storage(s.g, s.ci, s.co, s.kx, s.ky, s.kz);
    // Tiles of a vector of groups, in parallel. (Tiles of two and four vectors measured no
    // faster: the frame's cost is its columns' reads, cold and a row apart, after the main
    // pass, 7-20 % of the call on 28x28 to 112x112 planes; and four vectors left 192 groups
    // three tasks for two threads.)
    tiles.specialize(s.g_extent >= vec)
        .split(s.g, t_o, t_i, vec, TailStrategy::ShiftInwards)
        .vectorize(t_i)
        .reorder(t_i, s.ci, s.co, s.kx, s.ky, s.kz, t_o)
        .parallel(t_o);
    s.frame.specialize(s.g_extent >= vec).vectorize(s.g, vec, TailStrategy::GuardWithIf);
    tiles.split(s.g, t_o, t_i, 1).reorder(t_i, s.ci, s.co, s.kx, s.ky, s.kz, t_o);
    // (The updates come as generators/bwd_weights_generator.cpp defines them: rows, planes,
    // columns, then the columns outside the reduction's, two each. A column's positions run
    // along its rows, innermost; outside the reduction's (strided along x: the first
    // columns, up to past the padding, and the last; every tap that reads inside x), the
    // taps innermost, so that each position's cold reads of x serve all of them, and the
    // RVars in their order, as Halide keeps those of a subtraction.)
    for (int u = 0; u < s.frame.num_update_definitions(); u++) {
        const std::vector<RVar> r = s.frame.rvars(u);  // (ox, oy, oz, n)
        Stage update = s.frame.update(u);
        if (u >= 6) {
            update.reorder(s.g, s.kx, s.ky, s.kz, r[0], r[1], r[2], r[3]);
        } else {
            const bool columns = u >= 4;
            update.reorder(s.g, r[columns ? 1 : 0], r[columns ? 0 : 1], r[2], r[3], s.kx, s.ky, s.kz);
        }
        update.specialize(s.g_extent >= vec).vectorize(s.g, vec, TailStrategy::GuardWithIf);
    }
}

// nxg_gt: a task per block of groups (two vectors where there are two, under at most 9 taps
// with 32 vector registers, else one; the last block shifted inwards, its overlap summed
// twice alike), every image and position summed into the block's taps in registers; each
// image's plane of x, the block's groups with its zero border, staged in cache. Kernel
// alone against whole pairs of vectors and one-vector blocks for the rest: 144 groups on
// 28x28 1.77x, 240 on 14x14 2.02x. (The plane of x staged for every image at once, a block
// held 922 KB on mb_dw192_28: 0.81-0.90x; dy staged per image too 0.69-0.79x; x staged per
// row, a sliding window, 0.50-0.73x.)
void schedule_group_tasks(BwdWeightsStages &s, const Target &target, int vec) {
    Var gb("gb"), gv("gv");
    const RVar ox = s.r[0], oy = s.r[1], oz = s.r[2], n = s.r[3];
    const Expr two = s.g_extent >= 2 * vec && two_vector_taps_fit(s, target);
    const auto blocks = [&](Stage st, int lanes, TailStrategy tail) {
        st.split(s.g, gb, gv, lanes, tail).reorder(gv, s.ci, s.co, s.kx, s.ky, s.kz, gb).parallel(gb);
        if (lanes > 1) st.vectorize(gv);
    };
    for (const auto &[condition, lanes] : {std::pair{two, 2 * vec}, std::pair{s.g_extent >= vec, vec}}) {
        // (The filter's size specialised in dw's loops too: acc, allocated in them, then has
        // a constant size, and LLVM keeps its taps in registers; else a load and a store per
        // FMA.)
        Stage st = s.dw.specialize(condition);
        for (int taps : {3, 5}) blocks(st.specialize(s.square_2d(taps)), lanes, TailStrategy::ShiftInwards);
        blocks(st, lanes, TailStrategy::ShiftInwards);
        s.acc.specialize(condition).vectorize(s.g, lanes);
        Stage update = s.acc.update().specialize(condition);
        for (Stage tile : taps_in_registers(s, update, s.g, {ox, oy, oz, n}, {})) {
            tile.vectorize(s.g, lanes);
            for (int stride : {1, 2}) tile.specialize(s.stride_x == stride && s.dilation_x == 1);
        }
        update.reorder(s.g, ox, oy, oz, n, s.kx, s.ky, s.kz).vectorize(s.g, lanes);
    }
    blocks(s.dw, 1, TailStrategy::Auto);
    s.acc.compute_at(s.dw, gb).reorder_storage(s.g, s.ci, s.co, s.kx, s.ky, s.kz);
    s.acc.update().reorder(s.g, ox, oy, oz, n, s.kx, s.ky, s.kz);
    stage_in_cache(s.x_in, s.x_in.args()[4], vec, LoopLevel(s.acc, n));
}

}  // namespace

void schedule_bwd_weights_cpu(BwdWeightsStages &s, const Target &target, Layout layout) {
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    const int bytes = s.acc.output_types()[0].bytes();  // the staged copies' elements
    const bool groups_vectorised = one_channel_per_group(layout);
    const bool channels_first = rows_contiguous(layout);
    // Inputs staged once, in parallel over rows: converted (16-bit storage) and/or
    // transposed (channels first) so the vector dim (c, or g for depthwise) is innermost.
    // Depthwise channels first (ncg) stages them per tile instead, and the small-group
    // variants (nxc_sg, ncx_sg) their pairs per chunk (below).
    const bool group_blocks = groups_vectorised && channels_first;
    if ((s.staged_inputs || channels_first) && !group_blocks && !s.small_groups) {
        for (const auto &[f, channels] : {std::pair{s.x_in, s.ci_extent}, std::pair{s.dy_in, s.co_extent}}) {
            if (s.dy_broadcasts && f.name() == s.dy_in.name()) continue;  // read in place (below)
            if (s.x_block > 0 && f.name() == s.x_in.name()) continue;       // x_blocks (below)
            const std::vector<Var> a = f.args();  // (c, x, y, z, g, n)
            stage_vector_dim_innermost(f, groups_vectorised ? a[4] : a[0], groups_vectorised ? s.g_extent : channels,
                                       vec, channels_first, nullptr, s.rows_pass);
            if (!groups_vectorised) pad_aliasing_pixels(f, a[0], channels, s.g_extent, bytes, channels_first ? 1024 : 256);
        }
    }
    const RVar ox = s.r[0], oy = s.r[1], oz = s.r[2], n = s.r[3];
    Var co_o("co_o"), co_i("co_i"), ci_o("ci_o"), ci_i("ci_i"), co_vo("co_vo"), co_vi("co_vi");

    if (groups_vectorised && s.group_tasks) {
        schedule_group_tasks(s, target, vec);
        return;
    }
    if (groups_vectorised) {
        // Partial sums over chunks of `dw_rows` output rows of one image, in parallel; then
        // summed in a fixed order.
        RVar oyo("oyo"), oyi("oyi");
        Var u("u"), v("v"), g_o("g_o"), g_i("g_i");
        // ncg (rows narrower than a vector) defaults to 8 rows: a 7x7 plane is then one
        // chunk, not two, with half the partial sums to store and add (kernel alone,
        // mb_dw960_7 1.05-1.08x). nxg_sd (dy staged per chunk too) defaults to 16, as the
        // tuner set nxg on both x86 paths: kernel alone on the Zen 4, 4 rows ran mb_dw144_56
        // and mb_dw96s2_112 0.86-0.88x, 8 0.93-1.07x, 32 0.96-1.01x.
        const int rows = s.tuned.get("dw_rows", group_blocks ? 8 : s.staged_dy ? 16 : 4);
        Func part = s.acc.update().split(oy, oyo, oyi, rows, TailStrategy::GuardWithIf).rfactor({{oyo, u}, {n, v}});
        // The chunks' sums are stored by a pure copy of `part` whose loops hold the tiles, so
        // its split of the groups shifts inwards at the edge and each tile (part, computed
        // per vector of groups) has a constant size: registers. (Tiled in part's own update
        // loops, whose splits must guard, the tile's size was dynamic and LLVM kept every
        // FMA's accumulator in memory: a load and a store per FMA.)
        Func sums = part.in(s.acc);
        // Groups are the vector dim: store them innermost (else every vector is a gather).
        // With many groups, the chunks' sums are added, and dw stored, per block of groups in
        // parallel: done serially, they were a fifth of a small-plane call (kernel alone,
        // mb_dw960_7 NHWC 1.11x, NCHW 1.07x). With 144 groups, in two blocks, 0.72x: one,
        // and no parallel loop (whose launch alone cost 0.8x).
        // dw with its groups contiguous (HWIO, TF's depthwise filters): vectors of groups, the
        // taps outside, as acc holds them. (Scalar, the loops ran the taps innermost: a store
        // a group and tap, a line apart; NHWC mb_dw960_7 spent ~10 % of its call there,
        // profiled.) OIHW's groups are a filter apart: scalar stores along its taps.
        Var gb("gb"), gv("gv");
        Stage blocks = s.dw.specialize(s.g_extent >= 32 * vec);
        blocks.split(s.g, gb, gv, 8 * vec, TailStrategy::GuardWithIf).parallel(gb);
        s.dw.split(s.g, gb, gv, s.g_extent, TailStrategy::GuardWithIf);
        for (Stage st : {blocks, Stage(s.dw)}) {
            st.specialize(s.dw_g_stride == 1 && s.g_extent >= vec)
                .reorder(gv, s.ci, s.co, s.kx, s.ky, s.kz, gb)
                .vectorize(gv, vec, TailStrategy::GuardWithIf);
        }
        s.acc.compute_at(s.dw, gb).reorder_storage(s.g, s.ci, s.co, s.kx, s.ky, s.kz);
        s.acc.specialize(s.g_extent >= vec).vectorize(s.g, vec);
        s.acc.update().specialize(s.g_extent >= vec).vectorize(s.g, vec);
        sums.compute_root().reorder_storage(s.g, s.ci, s.co, s.kx, s.ky, s.kz, u, v);
        // Nested parallel loops over (image, chunk), not one fused loop (see the NXC tiles).
        // Channels first: a thread's task is a block of groups over a run of images
        // (`v_i`, cpu_staging.h), each image's planes of the block staged once for its
        // chunks (below), in parallel over (runs, blocks). Kernel alone, against a task per
        // (image, block): mb_dw960_7 1.22-1.36x, mb_dw576s2_14 1.11-1.17x, 48 groups of 7x7
        // over 32 images 1.38-1.45x; batch 1 (one image a task, as before) 0.94-0.97x.
        Var v_o("v_o"), v_i("v_i");
        const Expr images_per_task = ncg_images_per_task(s.g_extent, s.r[3].extent(), vec);
        const auto loops = [&](Stage st) {
            if (group_blocks) {
                st.split(v, v_o, v_i, images_per_task, TailStrategy::GuardWithIf)
                    .reorder(g_i, s.ci, s.co, s.kx, s.ky, s.kz, u, v_i, g_o, v_o)
                    .parallel(v_o)
                    .parallel(g_o);
            } else {
                st.reorder(g_i, s.ci, s.co, s.kx, s.ky, s.kz, g_o, u, v).parallel(v).parallel(u);
            }
        };
        // Channels last (nxg), exactly two vectors of groups (32 f32 groups on AVX-512: MobileNet's
        // first depthwise layer): one tile takes both, so a chunk's pass reads each pixel's
        // lines of dy (and its staged x) once, where a tile per vector read every other line,
        // twice over. Kernel alone, mb_dw32_112 NHWC 1.19x. With 32 vector registers, whole
        // pairs of vectors (the groups a multiple of two vectors) and at most 9 taps (18
        // accumulators), over any number of groups: each tile then reads two adjacent lines
        // of a pixel, which the strided reads of one line per pixel per tile were slow on.
        // Kernel alone on the Zen 5 (f32 NHWC): mb_dw192_28 1.14-1.15x, mb_dw960_7 1.09-1.20x,
        // mb_dw576s2_14 1.07-1.14x, 64 groups on 56x56 1.18x; a 5x5 filter (50 accumulators)
        // 0.97x. (On the Zen 4, half-rate 512-bit FMAs, 144 and 192 groups lost 0.91-0.95x,
        // the thirty-ninth session: bench/RESULTS.md, forty-sixth session.)
        // (The multiple first, a condition of its own: inside the specialisation Halide then
        // knows the groups fill whole tiles and drops the tiles' guards; under an `||` it did
        // not, 0.90x.)
        const Expr pixel_tile =
            s.g_extent % (2 * vec) == 0 &&
            (s.g_extent == 2 * vec || two_vector_taps_fit(s, target));
        // (Each tile's specialisations: the filter size, so the tile's size is a constant.)
        const auto vector_tiles = [&](const Expr &condition, int lanes) {
            Stage st = sums.specialize(condition);
            st.split(s.g, g_o, g_i, lanes).vectorize(g_i);
            loops(st);
            for (int taps : {3, 5}) st.specialize(s.square_2d(taps));
        };
        if (!group_blocks) vector_tiles(pixel_tile, 2 * vec);
        vector_tiles(s.g_extent >= vec, vec);
        sums.split(s.g, g_o, g_i, 1);
        loops(sums);
        const Var &tile_at = group_blocks ? u : g_o;
        // Each chunk's rows of x, zero border included, staged in cache (groups innermost,
        // the vector dim): the taps then load without the boundary test (6 compares and
        // 2 clamps per vector load) that the border of the padding would need.
        // nxg_sd (staged_dy; the registry's choice for dy of at least kStagedDyMinBytes, its
        // pixels wider than two lines, filters of at most 3x3) stages the chunk's rows of dy too: read in place, each
        // vector of groups' tile took one line of every pixel, a strided stream from memory
        // per tile. Kernel alone (Zen 4), mb_dw144_56 1.24-1.33x, mb_dw96s2_112 1.16x; where
        // dy is in cache an extra pass: mb_dw192_28 0.75x, 7x7 planes 0.75-0.81x, and
        // mb_dw32_112 (one two-vector tile per pixel, below) 0.83-0.87x.
        // Channels first (ncg: rows narrower than the pixel-vector kernels take): the block's
        // planes of x and dy, its groups only, transposed in cache (groups innermost).
        // Transposed whole before the tiles, they made two passes over memory more (NCHW
        // mb_dw960_7: 0.26 ms against 0.11 in NHWC).
        if (!channels_first) {
            if (!s.x_in_place) stage_in_cache(s.x_in, s.x_in.args()[4], vec, LoopLevel(sums, u));
            if (s.staged_dy) stage_in_cache(s.dy_in, s.dy_in.args()[4], vec, LoopLevel(sums, u));
        } else {
            // An image's planes of the block, every chunk of them; one allocation a task.
            const LoopLevel image(sums, v_i);
            for (Func f : {s.x_in, s.dy_in}) {
                // The tiles' blocks: vec groups (shifted inwards), or one (fewer groups).
                stage_vector_dim_innermost(f, f.args()[4], select(s.g_extent >= vec, vec, 1), vec, true, &image);
                f.store_at(LoopLevel(sums, g_o));
            }
        }
        // The tile: one vector of groups (two: pixel_tile), every tap, over the chunk's positions.
        part.compute_at(sums, tile_at).reorder_storage(s.g, s.ci, s.co, s.kx, s.ky, s.kz, u, v);
        // Square 3x3 and 5x5 filters: every tap in its own register (cpu_taps.h), over
        // `dw_positions` positions along x unrolled: with stride 1 (or 2) and no dilation
        // along x, their taps read x at constant offsets that overlap, and LLVM loads each x
        // vector once for them all (2 positions x 3 taps: 4 loads of x instead of 6). Measured
        // 5-15 % faster (4 positions: about the same), not the 1.5x predicted from one x
        // and one dy load per FMA: the loads were not what bounds these tiles.
        // Other shapes: taps outside the positions, one chain per tap, re-reading the chunk
        // (its rows of x and dy) from cache once per tap.
        // (The two-vector tile takes one position a step: 18 accumulators of 3x3 taps, and
        // with 2 positions it ran mb_dw32_112 4-8 % slower.)
        RVar oxo("oxo"), oxi("oxi");
        const auto tile = [&](const Expr &condition, int lanes, int positions) {
            part.specialize(condition).vectorize(s.g, lanes, TailStrategy::GuardWithIf);
            Stage pv = part.update().specialize(condition);
            pv.split(ox, oxo, oxi, positions, TailStrategy::GuardWithIf);
            for (Stage st : taps_in_registers(s, pv, s.g, {oxi, oxo, oyi, oz}, {})) {
                st.vectorize(s.g, lanes, TailStrategy::GuardWithIf).unroll(oxi);
                for (int stride : {1, 2}) st.specialize(s.stride_x == stride && s.dilation_x == 1);
            }
            pv.reorder(s.g, oxi, oxo, oyi, oz, s.kx, s.ky, s.kz).vectorize(s.g, lanes, TailStrategy::GuardWithIf);
        };
        if (!group_blocks) tile(pixel_tile, 2 * vec, 1);
        tile(s.g_extent >= vec, vec, s.tuned.get("dw_positions", 2));
        part.update().reorder(s.g, ox, oyi, oz, s.kx, s.ky, s.kz);
        if (s.frame.defined()) schedule_frame(s, LoopLevel(s.dw, gb), vec);
        return;
    }

    // The dy-broadcast variant (ncx_db) mirrors the tiles: vectors of ci (x, transposed
    // channels innermost) times broadcasts of dy, read in place along its rows (NCHW: a row
    // of one channel is contiguous), so dy, the larger activation where the registry sends
    // this variant, is never transposed (NCHW rn50_1x1_56: its copy was a third of the call).
    // Its tile is the NXC one swapped, co_tile input channels by ci_tile output channels; its
    // vector dim, stored innermost in the tile, the chunks' sums and acc, is ci.
    // (Not a branch of ncx: as one, reading dy or its copy through a select, Halide 14
    // dropped the update of another branch's tiles, the 8-channel groups of rx_g32_28.)
    // (vd: the vector dim, bd: the broadcast one.)
    const Var &vd = s.dy_broadcasts ? s.ci : s.co, &bd = s.dy_broadcasts ? s.co : s.ci;
    const Var &vd_i = s.dy_broadcasts ? ci_i : co_i, &bd_i = s.dy_broadcasts ? co_i : ci_i;
    const int ci_tile = BwdWeightsStages::ci_tile(s.tuned, target);
    const int co_tile = s.tuned.get("co_vectors", 2) * vec;
    const Expr tiled = s.ci_extent >= ci_tile && s.co_extent >= co_tile;
    // Few input channels (an RGB stem has 3): a 3 x 2-vector tile still amortises the loads;
    // with 4 vectors of co where there are (and ci a multiple of 3, no partial tile), 12
    // chains of FMAs instead of 6, fewer than the 8 that the FMA latency needs (rn50_stem
    // NHWC 1.21x, NCHW 1.08x; with 4 input channels, one full tile and one of a third,
    // 0.83-0.94x, hence the multiple of 3).
    const Expr narrow = s.ci_extent >= 3 && s.co_extent >= co_tile;
    // (Narrower than the tile, as the order implies: said so, the branch's reads of x_blocks
    // (c % ci_tile, c / ci_tile) simplify to (c, 0), one address for the tile's broadcasts.)
    const Expr few = narrow && s.ci_extent < ci_tile;
    const Expr vector = s.co_extent >= vec;
    // Small groups (ResNeXt: 4-8 channels per group): half-width vectors beat scalars.
    const Expr half = s.co_extent >= vec / 2;
    // Cache blocking. Each tile reads every position of x and dy, so with the reduction
    // innermost and whole, x and dy stream from DRAM once per tile and tap when they outgrow
    // the cache (rn50_1x1_56: ~257 MB per call; the stem: dy once per each of 49 taps). So
    // the reduction's rows (n, oz, oy) are cut into chunks of about `chunk_kb` of x and dy,
    // the chunk loop outermost: every tile and tap of a chunk works on cached rows. A tile
    // sums one chunk in registers (`part`) and stores it (`sums`, one filter per chunk); the
    // chunks' filters are then added in order. That costs a write and a read of the filter
    // per chunk: 8 bytes per filter element against 2 flops per element and position, so
    // chunks keep at least `chunk_positions` output positions each (512: 128 flops per
    // byte of that traffic; rn50_1x1_7's 4 MB filter over 392 positions: one chunk).
    // (Capped instead at a quarter of the data's traffic, large filters got one chunk
    // whatever their positions: on a Xeon with 2 MB of L2, dl_3x3_d2's 4356 positions of
    // 2 KB each then streamed from L3 once per tile, lines 1 KB apart, at 0.19x oneDNN.
    // Kernel alone against that cap: dl_3x3_d2 4.4x, rn50_3x3s2_28 1.4x, rn50_3x3_14
    // 1.3x; with 256 positions the same but rn50_3x3_14 1.15x, with 1024 0.75x, 0.62x,
    // 0.93x of 512.) The chunks depend on sizes only and are summed in a fixed order:
    // results stay deterministic.
    // Grouped layers: a tile reads only its group's channels of a chunk, so the chunk's bytes
    // scale with the groups (up to 2x): with 512 KB chunks, rx_g32_28's (group, tap) tiles
    // had ~1 us of work per chunk (4.4 -> 3.3-3.6 ms with 4x larger chunks, same runs). But a
    // tile touches a line of x and one of dy per pixel, with channels-last pixels 1 KB apart
    // (256 channels), and lines 1 KB apart fill only 1/16 of the L2's sets: with 4x chunks,
    // one tile's lines (~1000 of each) outgrew them whenever the staged x's lines shared
    // their sets with dy's, which depends on where the two buffers start (kernel alone,
    // rx_g32_28 NHWC: 1.9 or 4.0 ms, the same code; in the suite, 2.1 or 4.8 ms a process).
    const float chunk_bytes = 1024.f * float(s.tuned.get("chunk_kb", 512));
    const Expr data_bytes = Halide::cast<float>(s.reduction_rows) * s.row_bytes;
    const Expr group_scale = Halide::cast<float>(Halide::clamp(s.g_extent, 1, 2));
    const float chunk_positions = float(s.tuned.get("chunk_positions", 512));
    const Expr positions = Halide::cast<float>(s.reduction_rows) * Halide::cast<float>(s.ox_extent);
    const Expr chunks = chunk_bytes > 0
        ? Halide::max(1, Halide::cast<int>(Halide::min(data_bytes / (chunk_bytes * group_scale),
                                                       positions / chunk_positions)))
        : Expr(1);
    // The positions floor must not make a chunk outgrow the L2 where rows are long: pointwise
    // planes come as rows of up to 512 positions (runtime/src/execute.cpp), so 512 positions
    // took two rows, 1.15 MB of x and dy for rn50_1x1_56 and 2 MB for 128->512 on 28x28. The
    // tiles read dy's pixels 1-2 KB apart (a line per pixel and vector), a strided stream
    // that then came from L3. Chunks are capped at `chunk_max_kb` of rows (times the groups'
    // scale) where the filter, written once more per extra chunk, is at most a quarter of
    // that: kernel alone on the Xeon, rn50_1x1_56 NHWC 1.06-1.08x, 128->512 on 28x28
    // 1.39-1.40x; the layers with larger filters (rn50_1x1_7, rn50_3x3_14, dl_3x3_d2) keep
    // the floor. Not in ncx_db, whose dy rows stream in place and contiguous: capped, NCHW
    // rn50_1x1_56 ran 0.95-0.97x.
    const float chunk_cap = 1024.f * float(s.tuned.get("chunk_max_kb", 1024));
    // (In float, a factor at a time: the products overflow 32 bits on large layers.)
    const Expr filter_bytes = Halide::cast<float>(s.ci_extent) * Halide::cast<float>(s.co_extent) *
                              Halide::cast<float>(s.kx_extent * s.ky_extent * s.kz_extent * s.g_extent) * float(bytes);
    const Expr row_cap = Halide::max(1, Halide::cast<int>(chunk_cap * group_scale / Halide::max(s.row_bytes, 1.f)));
    const Expr cap_rows = Halide::select(!s.dy_broadcasts && filter_bytes <= chunk_cap / 4, row_cap, s.reduction_rows);
    const Expr chunk_rows = Halide::min(ceil_div(s.reduction_rows, chunks), cap_rows);
    // A chunk is part of a plane (rows of one image) or whole planes: the row loop inside is
    // a plain loop over oy, and (oz, n) are decoded from a fused index (divisions) once per
    // plane part, not per row (rn50_1x1_7 has 7 positions per row).
    // Each factor is max(1, .) so that bounds inference knows its sign: with a factor of
    // unknown sign, the staged rows of x for chunk u reached back to row 0 (98 MB per chunk).
    const Expr plane_rows = Halide::max(1, Halide::min(s.oy_extent, chunk_rows));
    const Expr planes = Halide::max(1, chunk_rows / s.oy_extent);
    RVar oyo("oyo"), oyi("oyi"), planes_all("planes_all"), chunk("chunk"), plane("plane");
    Var u("u"), w("w");

    // Threads split the chunks when there are enough of them (`per_chunk`): each works on
    // its own chunks, cached in its own core's L2, and no barrier waits at the end of each
    // chunk. Otherwise (few chunks: small problems, large filters) they split the tiles of
    // each chunk in turn. (With the tiles split, rn50_1x1_56's 56 chunks of 64 tiles ran
    // at 1.65 threads on average, and a sixth of the call went to the launches and waits.)
    // Chunks are given to threads in order of need, so an uneven last one costs at most
    // one chunk's work; the result does not depend on which thread summed a chunk.
    const Expr per_chunk = ceil_div(s.reduction_rows, chunk_rows) >= 8;  // the chunks there are
    // `row_taps`: the tile holds a row of taps (kx) too (the small-group branches and RGB stems
    // below).
    // Tiles split between the threads (few chunks) run their co blocks in series within a
    // task (`co_oi`) when the other dims give 16 tasks or more: a tile's sums over a chunk
    // are about a microsecond of work, near what launching a task costs, and a task's block
    // of x stays in L1 across its co blocks. (Against one task per tile, kernel alone on a
    // Xeon: rn50_3x3_14 1.23x, rn50_1x1_7 1.11x, batch-1 512->512 3x3 on 7x7 2.8x, smaller
    // layers 1.0-1.1x.) With fewer (1x1 layers with few input channels), enough co blocks
    // stay parallel to make about 16 (5 other tasks: 5 co blocks in 3 tasks of 2, 2, 1).
    Var co_oo("co_oo"), co_oi("co_oi"), g_p("g_p"), g_par("g_par");
    // `pairs` (nxc_sg): the tile spans a pair of groups (g_par innermost, see below).
    // `whole`: nxc_wr's tiles, dw's own loops (no chunks: u and w are not there).
    auto nest = [&](Stage st, int ci_factor, int co_factor, bool row_taps, bool chunk_threads, bool pairs,
                    bool whole = false) {
        const Expr co_blocks = ceil_div(s.co_extent, co_factor);
        const Expr other_tasks = ceil_div(s.ci_extent, ci_factor) * (row_taps ? 1 : s.kx_extent) * s.ky_extent *
                                 s.kz_extent * (pairs ? s.g_extent / 2 : s.g_extent);
        const Expr co_tasks = Halide::min(co_blocks, ceil_div(16, other_tasks));
        const Expr co_serial = chunk_threads ? Expr(1) : Halide::max(1, ceil_div(co_blocks, co_tasks));
        st.split(s.co, co_o, co_i, co_factor)
            .split(co_o, co_oo, co_oi, co_serial, TailStrategy::GuardWithIf)
            .split(s.ci, ci_o, ci_i, ci_factor,
                   whole ? TailStrategy::GuardWithIf
                          : ci_factor == s.x_block ? TailStrategy::RoundUp : TailStrategy::Auto);
        // (RoundUp: the branch takes an even number of groups, and a pair's tile starts at an
        // even group, which lets Halide see x_pairs' lanes as one 64-bit broadcast.)
        if (pairs) st.split(s.g, g_p, g_par, 2, TailStrategy::RoundUp).unroll(g_par);
        const Var &g_loop = pairs ? g_p : s.g;
        std::vector<VarOrRVar> order = {vd_i, bd_i};
        if (row_taps) order = {co_i, ci_i, s.kx};
        // (The pair's groups inside the tile's loop, co_oi, where part is computed.)
        if (pairs) order.insert(order.begin() + 1, g_par);
        for (const Var &d : {co_oi, co_oo, ci_o}) order.push_back(d);
        if (!row_taps) order.push_back(s.kx);
        for (const Var &d : {s.ky, s.kz, g_loop}) order.push_back(d);
        if (!whole) order.insert(order.end(), {u, w});
        st.reorder(order);
        if (row_taps) st.unroll(s.kx);
        // Nested parallel loops, not one fused loop: Halide 14 gives the dims of a fused loop
        // their whole range in bounds inference, which sized the tile's accumulators (computed
        // inside) by every tap, as a heap allocation per tile.
        if (chunk_threads) {
            st.parallel(w).parallel(u);
        } else {
            if (!row_taps) st.parallel(s.kx);
            for (const Var &d : {co_oo, ci_o, s.ky, s.kz, g_loop}) st.parallel(d);
        }
    };
    // Specialise before splitting: each branch gets its own split factors (same names).
    // Branches in order: (condition, ci tile, co tile, vector width); the last is scalar.
    struct Branch {
        Expr condition;
        int ci, co, lanes;
        int row_taps = 0;       // with this many taps along x (3 or 7): a tile over them all
        bool pairs = false;     // nxc_sg: a tile over a pair of groups
    };
    // Grouped layers with 8-16 channels per group get a ci tile over narrower co vectors:
    // one chain per (ci, co-vector) would leave the FMA pipes idle for its latency.
    // Every condition bounds co from above too, although the order makes that redundant:
    // spelled `ci >= k && co >= k`, Halide 14 simplified a branch's condition to
    // `k <= min(ci, co)` and dropped acc's update stage from that branch (zero results: for
    // k = 8 on AVX-512 f32, and on SSE4.1 f32 and AVX2/AVX-512 f64 for the 1-vector tile;
    // TfRandom and the qemu ISA runs of DtypeContract caught them).
    // The `any` variant (no contiguous dim) is the rare fallback: scalar only (see the data
    // gradient's schedule).
    const Expr co_below_tile = s.co_extent < co_tile, co_below_vec = s.co_extent < vec;
    std::vector<Branch> branches;
    if (s.dy_broadcasts) {
        // (Equal bounds would meet the simplification above: ARM64 float32, SSE4.1 float64.)
        const int co_b = co_tile == ci_tile ? ci_tile / 2 : ci_tile;
        branches = {{s.ci_extent >= co_tile && s.co_extent >= co_b, co_tile, co_b, vec}};
    } else if (layout != Layout::Any) {
        // nxc_sg, groups of half a vector in pairs (ResNeXt's 8 channels per group): the
        // tile's vectors are (group of the pair, co), the group innermost, so every lane
        // works where the half-vector tile below left half idle. x_pairs and dy_pairs hold a
        // pair's two values per channel side by side: each FMA takes one 64-bit broadcast of
        // x, and dy is one dense vector load per position. (Staged with the pairs in place of
        // x, dy read from dy itself: 1.22x the half-vector tile, kernel alone on rx_g32_28.)
        const Branch tile = {tiled, ci_tile, co_tile, vec};
        const Branch vector_row = {s.ci_extent >= ci_tile && vector && co_below_tile, ci_tile, vec, vec, 3};
        if (s.small_groups) {
            // The registry gives nxc_sg 8 dy channels per group and at least 8 x channels:
            // past the pairs (AVX-512 f32), the one-vector row of taps (AVX2 f32, AVX-512
            // f64) or the 2-vector tile (narrower vectors) take them, and the scalar nest
            // anything else. Fewer branches, each with its own copies of the per-chunk
            // staging: with all of nxc's, the schedule check took 290 s more in CI.
            // (dy is read from dy_pairs, so its own group stride does not matter here.)
            // Its conditions are spelled for co == 8 (`co % co_tile == 0`, `co == vec`), not
            // as nxc's `tile` and `vector_row`: where ci_tile equals co_tile (SSE4.1 f64: 4
            // and 4) or vec (AVX-512 f64: 8 and 8), Halide 14 simplified those to
            // `k <= min(ci, co)` and dropped the update of the tiles' partial sums (acc_intm)
            // from the branch, and f64 small groups summed zeros (the accumulator check's
            // rfactor-intermediate case found both in the lowered statements).
            branches = {{s.co_extent * 2 == vec && s.g_extent % 2 == 0 && s.ci_extent >= ci_tile,
                         ci_tile, vec / 2, vec / 2, 3, true},
                        {s.co_extent % co_tile == 0 && s.ci_extent >= ci_tile, ci_tile, co_tile, vec},
                        {s.co_extent == vec && s.ci_extent >= ci_tile, ci_tile, vec, vec, 3}};
        } else {
            branches = {tile};
            // RGB stems (exactly 3 channels, undilated along x): the tile takes the channels x
            // the row's taps, 7 (ResNet's 7x7) by one vector of co, 21 accumulators, or 3
            // (MobileNet's 3x3) by two, 18: one dy vector per position feeds 21 (9) FMAs, each
            // broadcasting x from x_blocks at a constant offset (3 channels and no dilation
            // make every address one register's). The 3 x 4-vector tile below loaded 4 dy
            // vectors (256 bytes, from L2: a chunk's dy outgrows L1) per 12 FMAs, for each of
            // the 49 taps; the 3 x 2-vector one (3x3 filters, 32 co) kept 6 chains of FMAs.
            // Kernel alone on a Xeon (AVX-512 f32, batch 8, ms ratio before / after):
            // rn50_stem 1.17-1.28x (7.05 ms, 86 % of the peak; NCHW 1.06x), at batch 1 1.05x;
            // 3 -> 32 channels 3x3 stride 2 on 225x225 1.20x (NCHW 1.13x). (Channels and
            // dilation left at run time, every broadcast took an index register of its own,
            // reloaded from the stack: 0.89x.) AVX-512 float32 alone: what was measured
            // (ARM64's 32 registers would hold them too, unmeasured), and each branch costs
            // the kernels with x_blocks compile time (+3.7 s for nxc's).
            if (vector_registers(target) == 32 && target.arch == Target::X86 && s.x_block > 0 &&
                s.acc.output_types()[0] == Float(32)) {
                branches.push_back({few && s.ci_extent == 3 && s.kx_extent == 7 && s.dilation_x == 1, 3, vec, vec, 7});
                branches.push_back({few && s.ci_extent == 3 && s.kx_extent == 3 && s.dilation_x == 1, 3, 2 * vec, vec, 3});
            }
            const bool half_vectors = half_vectors_pay(vec);  // cpu_staging.h
            branches.insert(branches.end(), {
                        {few && s.ci_extent % 3 == 0 && s.co_extent >= 2 * co_tile, 3, 2 * co_tile, vec},
                        {few, 3, co_tile, vec},
                        vector_row});
            if (half_vectors) branches.push_back({s.ci_extent >= ci_tile && half && co_below_vec, ci_tile, vec / 2, vec / 2, 3});
            branches.push_back({vector, 1, vec, vec});
            if (half_vectors) branches.push_back({half, 1, vec / 2, vec / 2});
        }
    }
    if (s.whole_reduction) {
        // nxc_wr: acc whole (no chunks, no rfactor), its tile nest dw's own, each tile's sums
        // over every position stored from registers straight into dw (the registry sends layers with few positions and tiles
        // of ci_tile x co_tile or more). Through nxc's partial sums such a layer wrote its
        // filter three times (the sums, acc's block, dw): batch-1 2048 -> 512 on 7x7 spent
        // 0.53 ms of its 0.79 there (Halide's profiler).
        // A tile's input channels are a whole block of x_blocks (aligned, guarded at the
        // end: the last block's spare slots read copies of its last channel), so its
        // broadcasts read one block at constant offsets.
        // (HWIO, dw's co contiguous: dense vector stores; other filter layouts scatter.)
        for (Stage st : {s.dw.specialize(s.dw_co_stride == 1), Stage(s.dw)}) {
            nest(st, ci_tile, co_tile, false, false, false, true);
            st.vectorize(co_i, vec).unroll(ci_i);
        }
        s.acc.compute_at(s.dw, co_oi)
            .reorder_storage(s.co, s.ci, s.kx, s.ky, s.kz, s.g)
            .align_bounds(s.ci, ci_tile)
            .bound_extent(s.ci, ci_tile);
        s.acc.split(s.co, co_vo, co_vi, vec, TailStrategy::GuardWithIf).vectorize(co_vi).unroll(co_vo).unroll(s.ci);
        s.acc.update()
            .split(s.co, co_vo, co_vi, vec, TailStrategy::GuardWithIf)
            .reorder(co_vi, co_vo, s.ci, s.kx, ox, oy, oz, n)
            .vectorize(co_vi)
            .unroll(co_vo)
            .unroll(s.ci);
        stage_x_blocks(s, vec, channels_first);
        return;
    }
    s.acc.update()
        .split(oy, oyo, oyi, plane_rows, TailStrategy::GuardWithIf)
        .fuse(oz, n, planes_all)
        .split(planes_all, chunk, plane, planes, TailStrategy::GuardWithIf);
    Func part = s.acc.update().rfactor({{oyo, u}, {chunk, w}});
    // The tiles are the loops of this pure copy, so their splits may shift inwards at the
    // edges (updates only allow guards, which made part's size dynamic).
    Func sums = part.in(s.acc);
    sums.compute_root().reorder_storage(vd, bd, s.kx, s.ky, s.kz, s.g, u, w);
    // Small groups (one co vector, or half of one, per ci_tile channels): the tile's loads
    // (one dy vector and ci_tile broadcasts of x per position) each touch a new cache line
    // for 8 FMAs, and rx_g32_28 ran at 23 % of peak. With a filter 3 taps wide, the tile
    // takes the three (3 x 8 accumulators): per position one dy vector feeds 24 FMAs, and
    // the x of taps 1 and 2 was loaded by the positions before.
    // Specialise before splitting: each branch gets its own split factors (same names).
    const auto tile_branches = [&](Stage outer, bool chunk_threads) {
        for (const Branch &b : branches) {
            Stage st = outer.specialize(b.condition);
            if (b.row_taps > 0) {
                Stage st3 = st.specialize(s.kx_extent == b.row_taps);
                nest(st3, b.ci, b.co, true, chunk_threads, b.pairs);
                st3.vectorize(co_i, b.lanes).unroll(ci_i);
            }
            nest(st, b.ci, b.co, false, chunk_threads, b.pairs);
            st.vectorize(vd_i, b.lanes).unroll(bd_i);
        }
        nest(outer, 1, 1, false, chunk_threads, false);
    };
    tile_branches(sums.specialize(per_chunk), true);
    tile_branches(sums, false);
    // x staged once with its zero border (channels innermost, as in x): the tiles then
    // broadcast x straight from memory. Read through the boundary condition, every
    // broadcast needed a bounds test, a clamp and a blend first (8 per 16 FMAs), and the
    // FMAs ran at ~55 % of the peak. (Staging per chunk instead, computed at the chunk loop,
    // failed: with runtime split factors, bounds inference sized each chunk's copy from
    // row 0 up, 98 MB per chunk for the stem.) Staged inputs (16-bit, channels first)
    // already are. nxc_xp reads x in place (s.x_in_place: the reduction skips the padding).
    if (s.small_groups) {
        // nxc_sg: x_pairs and dy_pairs (gpar, c, x, y, z, gp, n), a pair's channels
        // interleaved, staged per chunk (in L2) with each pair's pixels contiguous, so a tile
        // streams whole lines. Read in place, a tile took one line of x and one of dy per
        // pixel, 1 KB apart, each pair's first pass over a chunk a miss to memory that no
        // prefetcher predicts: kernel alone on rx_g32_28, tiles 1.31 -> 0.76 ms, staging
        // 0.32 -> 0.73 ms (x staged once before, in place of dy's reads), 1.10x in all.
        // ncx_sg (channels first) copies them so too, each pair's rows transposed by the
        // TransposedRows pass (cpu_staging.h): kernel alone on NCHW rx_g32_28, 2.11 ms
        // against ncx's 3.29 (its half-vector tiles over copies transposed whole), 1.56x.
        // (The copies' specialisation on a pair's channels filling one vector only where it
        // can hold: the registry's 8 dy channels per group, 16 lanes.)
        const bool pair_vectors = vec == 2 * kSmallGroupPairChannels;
        for (auto [f, stride, channels] : {std::tuple{s.x_pairs, s.x_g_stride, s.ci_extent},
                                           std::tuple{s.dy_pairs, s.dy_g_stride, s.co_extent}}) {
            const std::vector<Var> a = f.args();
            f.compute_at(sums, u).reorder_storage(a[0], a[1], a[2], a[3], a[4], a[6], a[5]);
            copy_pairs_along_rows(f, stride, vec, channels_first, pair_vectors ? channels : Expr());
        }
    } else if (s.x_block > 0) {
        stage_x_blocks(s, vec, channels_first);
    } else if (!s.staged_inputs && !channels_first && !s.x_in_place) {
        stage_vector_dim_innermost(s.x_in, s.x_in.args()[0], s.ci_extent, vec, false);
        pad_aliasing_pixels(s.x_in, s.x_in.args()[0], s.ci_extent, s.g_extent, bytes, 256);
    }

    // A tile's sums over one chunk, in registers: co (ci in ncx_db) is the vector dim,
    // stored innermost so the tile's vectors are contiguous.
    // (nxc_sg: the group first, so a pair's tile holds its vectors of (group, co) whole;
    // its other branches' tiles have one group.)
    part.compute_at(sums, co_oi);
    if (s.small_groups) {
        part.reorder_storage(s.g, vd, bd, s.kx, s.ky, s.kz, u, w);
    } else {
        part.reorder_storage(vd, bd, s.kx, s.ky, s.kz, s.g, u, w);
    }
    for (const Branch &b : branches) {
        // GuardWithIf: see cpu_bwd_data.cpp (keeps every branch's tile a constant size).
        Stage pure = part.specialize(b.condition), update = part.update().specialize(b.condition);
        pure.split(vd, co_vo, co_vi, b.lanes, TailStrategy::GuardWithIf)
            .vectorize(co_vi).unroll(co_vo).unroll(bd);
        update.split(vd, co_vo, co_vi, b.lanes, TailStrategy::GuardWithIf)
            .reorder(co_vi, co_vo, bd, s.kx, ox, oyi, plane)
            .vectorize(co_vi).unroll(co_vo).unroll(bd);
        if (b.pairs) {
            // Both groups of the pair in each vector, the group innermost (nested vectors:
            // Halide 14 loads dy_pairs' vector whole and broadcasts x_pairs' 64-bit pair per
            // FMA, a vbroadcastsd: a load-port uop, no shuffle).
            Var gq("gq"), gpar("gpar");
            for (Stage st : {pure, update}) {
                st.split(s.g, gq, gpar, 2, TailStrategy::GuardWithIf).reorder(gpar, co_vi).vectorize(gpar);
            }
        }
        if (b.row_taps > 0) {
            // (A specialisation copies the schedule as it stands: these come last.)
            pure.specialize(s.kx_extent == b.row_taps).unroll(s.kx);
            update.specialize(s.kx_extent == b.row_taps).unroll(s.kx);
        }
    }
    part.update().reorder(vd, bd, ox, oyi, plane);

    // The chunks' filters added in chunk order (acc: co vectors, as the sums hold them) and
    // stored into dw per block of input channels, with the parallel loops outermost.
    // (With the taps and co vectors outside the parallel loop, rn50_1x1_7 launched 32 loops
    // of 256 tasks of 128 outputs each.) Stores run along dw's contiguous dim:
    //   - co (HWIO, TF's filters): vectors of co, as acc holds them; a block is vec input
    //     channels by every co of every group (a row of HWIO: groups are outer to co), in
    //     parallel over (ci block, tap), so a task reads and writes whole rows of the sums
    //     and of dw. (Blocks of 4 vectors of co, in parallel over co blocks, read 256-byte
    //     pieces of rows 2 KB apart: rn50_1x1_7's 4 MB filter took 0.68 ms in this pass, now
    //     0.35; kernel alone 1.09x, rn50_3x3_14 1.07x. In parallel over groups too,
    //     rx_g32_28's 288 tasks of 64 outputs each took 0.41 ms, now 0.21.)
    //   - else (OIHW: taps innermost, then ci): blocks of vec input channels by co_block
    //     output channels, in parallel over (co block, group); vectors of ci, lanes one
    //     filter's taps apart, with the tap loops inside filling the same lines; dense
    //     stores for 1x1 filters. (Blocks of a vector of co by 2-4 of ci, kernel alone:
    //     NCHW rn50_1x1_7 0.97-1.02x, rn50_3x3_14 0.94-1.00x.) Vectors of co there were
    //     scatters, lanes 8 KB apart in the same L1 set (NCHW rn50_1x1_7: ~30 % of the call
    //     in this pass).
    // Filters whose vector dim has half a vector's channels or more but not a whole one
    // (ResNeXt's 8 per group against AVX-512's 16 f32 lanes) take half vectors in this pass:
    // with whole ones, GuardWithIf left every lane to the scalar tail (rx_g32_28, profiled:
    // acc 0.19 ms and dw 0.03 ms of 2.3 in NHWC, 0.20 and 0.07 of 2.4 in NCHW).
    const auto narrow_dim = [&](const Expr &extent) { return extent < vec && extent >= vec / 2; };
    Var ci_b("ci_b"), co_b("co_b");
    const int co_block = 4 * vec;
    const auto blocks = [&](Stage st, int ci_block) {
        return st.split(s.co, co_b, co_i, co_block, TailStrategy::GuardWithIf)
            .split(s.ci, ci_b, ci_i, ci_block, TailStrategy::GuardWithIf);
    };
    Stage co_rows = s.dw.specialize(s.dw_co_stride == 1);
    blocks(co_rows, vec).reorder(co_i, co_b, s.g, ci_i, ci_b, s.kx, s.ky, s.kz);
    for (const Var &d : {ci_b, s.kx, s.ky, s.kz}) co_rows.parallel(d);
    co_rows.specialize(narrow_dim(s.co_extent)).vectorize(co_i, vec / 2, TailStrategy::GuardWithIf);
    co_rows.vectorize(co_i, vec, TailStrategy::GuardWithIf);
    const auto ci_vectors = [&](Stage st, int lanes) {
        blocks(st, lanes)
            .reorder(ci_i, s.kx, s.ky, s.kz, co_i, ci_b, co_b, s.g)
            .vectorize(ci_i)
            .parallel(co_b).parallel(s.g);
    };
    ci_vectors(s.dw.specialize(narrow_dim(s.ci_extent)), vec / 2);
    ci_vectors(s.dw, vec);
    // 1x1 OIHW: dense stores, each vector of ci gathered from acc's block (co innermost) along
    // a loop over co innermost, which the TransposedRows pass (NCX, 32-bit) transposes by
    // 4x4 blocks in lanes. (With the taps' loops inside, Halide gathered each vector lane by
    // lane: NCHW rn50_1x1_7's 4 MB filter took 0.56 ms in this pass, now 0.39; kernel alone
    // 1.05-1.09x.)
    s.dw.specialize(s.dw_ci_stride == 1).reorder(ci_i, co_i, s.kx, s.ky, s.kz, ci_b, co_b, s.g);
    // acc stored co innermost (ncx_db: ci), as its update reads the sums: HWIO copies it in
    // vectors, OIHW gathers its vectors of ci (from a block in L1).
    s.acc.compute_at(s.dw, ci_b).reorder_storage(vd, bd, s.kx, s.ky, s.kz, s.g);
    s.acc.update().reorder(vd, oyo, chunk, bd);
    const Expr vd_extent = s.dy_broadcasts ? s.ci_extent : s.co_extent;
    const Expr narrow_vd = narrow_dim(vd_extent);
    // (nxc_sg, its groups' co exactly half a vector (the registry's 8, AVX-512 f32): a constant
    // extent, no guard; the chunks' sums added 0.10-0.16 -> 0.08 ms, rx_g32_28 profiled.)
    const Expr half_vd = vd_extent == vec / 2;
    for (Stage st : {Stage(s.acc), s.acc.update()}) {
        if (s.small_groups && vec == 2 * kSmallGroupPairChannels) {
            st.specialize(half_vd).vectorize(vd, vec / 2, TailStrategy::GuardWithIf);
        }
        st.specialize(narrow_vd).vectorize(vd, vec / 2, TailStrategy::GuardWithIf);
        st.vectorize(vd, vec, TailStrategy::GuardWithIf);
    }
}

}  // namespace convgrad::gen
