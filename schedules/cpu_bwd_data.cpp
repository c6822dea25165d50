// CPU schedules of the data gradient.
//
// One register-tiled loop nest for every layout: a tile of (channel or group vectors) x
// (pixels along x), reduced over output channels and taps with the accumulators in
// registers; threads own rows (y, n). The vector dim is c (nxc, ncx, any) or g (depthwise:
// nxg, ncg). The filter is packed once with the vector dim innermost. NXC and NXG tiles read
// dy staged per block of rows with its zero border (no boundary tests in the tiles).
// Channels-first layouts (ncx, ncg: x contiguous) run the same tiles on staged copies: dy is
// transposed once into vector-dim-innermost order, the tiles write a vector-dim-innermost
// dx_local per row of dx (per block of rows with channel slabs), and dx's rows are a
// transposing copy of it (in cache). The extra
// passes cost far less than tiles with strided vectors (NCHW ran at 0.06x oneDNN with its
// own x-vector tiles).
// The stride-2 variants (x_phases = 2) run the same tiles over q, the pixels of one phase of
// x = 2q + p, with p just outside the tiles: every pixel of a tile takes the same taps.
// Branches by size: 7-pixel rows, 2/1/half-vector tiles over pixels, single vectors, then
// the few-channel case (rfactor over output channels). The pixel-vector variants (_px: NXC
// with at most 4 channels per group, and channels-first layers with rows the registry finds
// wide enough, which vectorise along the rows without transposed copies) have a schedule of
// their own: cpu_bwd_data_pixels.cpp.
//
// Tile sizes follow the register file: 32 vector registers with AVX-512, 16 otherwise.
// Every tiled branch also has a unit-stride specialisation that drops the tap predicate.
#include "../generators/bwd_data.h"
#include "cpu_staging.h"

namespace convgrad::gen {

void schedule_bwd_data_cpu(BwdDataStages &s, const Target &target, Layout layout) {
    if (s.pixel_vectors) {
        schedule_bwd_data_cpu_pixels(s, target, layout);
        return;
    }
    if (s.pairs) {  // nxc_sg on x86: groups in pairs
        schedule_bwd_data_cpu_pairs(s, target);
        return;
    }
    // Threads own rows: nested parallel loops over y and n rather than one fused loop. Halide
    // 14 gives the dims of a fused loop their whole range in bounds inference, so the tile's
    // accumulators (computed inside it) were sized by the full y extent: a heap allocation per
    // tile instead of registers (mb_dw32_112: 2.1 -> 0.87 ms; rn50_3x3_56: 12.0 -> 9.2 ms).
    const auto parallel_rows = [&](Stage st) { st.parallel(s.y).parallel(s.n); };
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    const bool groups_vectorised = one_channel_per_group(layout);
    const bool channels_first = rows_contiguous(layout);
    // dy is staged (converted, zero border included) once before the tiles when its
    // elements are converted in software (16-bit), in channels-first layouts (transposed so
    // the vector dim is innermost) and in the x-phase NXC variant. NXC and NXG stage it per
    // block of rows instead (below).
    // Depthwise channels first (ncg: rows narrower than the pixel-vector kernels take) runs
    // per block of one vector of groups instead: dy's rows of those groups staged and dx's
    // written from cache (below).
    const bool group_blocks = groups_vectorised && channels_first;
    Var vo("vo"), vi("vi"), n_o("n_o"), n_i("n_i");
    // ncg: a thread's task is a block of groups over a run of images (n_i), each image's
    // planes of dy staged and of dx computed in cache (cpu_staging.h). Kernel alone, against
    // a task per (image, block): 7x7 planes, 960 groups 1.18x, 48 groups over 32 images
    // 1.35x; mb_dw576s2_14 1.02x; batch 1 (a task per block, as before) 0.94x.
    const Expr images_per_task = ncg_images_per_task(s.g_extent, s.n_extent, vec);
    if (group_blocks) {
        // The blocks are dx's (a guarded split): the smallest holds G % vec groups, if any.
        const std::vector<Var> a = s.dy_in.args();  // (co, x, y, z, g, n)
        const Expr smallest_block = select(s.g_extent % vec == 0, vec, s.g_extent % vec);
        const LoopLevel image(s.dx, n_i);
        stage_vector_dim_innermost(s.dy_in, a[4], smallest_block, vec, true, &image);
        s.dy_in.store_at(s.dx, vo);
    } else if (s.staged_inputs || channels_first || (layout == Layout::NXC && s.phased)) {
        const std::vector<Var> a = s.dy_in.args();  // (co, x, y, z, g, n)
        stage_vector_dim_innermost(s.dy_in, groups_vectorised ? a[4] : a[0],
                                   groups_vectorised ? s.g_extent : s.r[0].extent(), vec, channels_first);
    }
    const RVar co = s.r[0], kx = s.r[1], ky = s.r[2], kz = s.r[3];
    // vectors x pixels accumulators: 12 of 32 registers with AVX-512, 6 of 16 otherwise.
    // Depthwise tiles are one vector wide (below), so 16 registers hold 6 pixels (7 on rows
    // of 7s) too: with 3, an AVX2 tile kept 3 FMA chains in flight for its taps' loop
    // overhead (2 GHz Zen 1, kernel alone: NHWC mb_dw32_112 1.50x, mb_dw192_28 1.81x, 5x5
    // over 13x13 at batch 1 1.53x; NCHW ncg mb_dw960_7 1.57x).
    const int pixels = s.tuned.get("pixels", vector_registers(target) == 32 || groups_vectorised ? 6 : 3);
    const int vectors = s.tile_vectors(target);
    // (4 x 7 pointwise tiles spill: rn50_1x1_56 1.2x slower than 4 x 6.)
    const bool rows7 = s.tuned.get("rows7", pixels == 6 && vectors == 2 ? 1 : 0) != 0;
    Var c_o("c_o"), c_i("c_i"), x_o("x_o"), x_i("x_i"), g_o("g_o"), g_i("g_i");

    // The tiles write `out`: dx itself, or for channels-first layouts a staged dx_local
    // (vector dim innermost) that dx then copies, vectorised along its contiguous x.
    Func out = s.dx;
    Var y_o("y_o"), y_i("y_i");
    const int block_rows = s.block_rows();
    // Channel slabs (ncx_cs): dx_local per block of rows, so each slab runs over the block's
    // rows and its filter streams once per block, as in NXC (slab_rows, below). Kernel alone,
    // NCHW: rn50_3x3_14 1.31x, dl_3x3_d2 1.16x, rn50_3x3s2_28 1.09x, 512 -> 512 on 7x7
    // (batch 1) 1.16x, 64 -> 64 on 12x12 1.29x, a 3-D 32 -> 32 1.14x, rn50_1x1_7 1.00x.
    const bool local_row_blocks = channels_first && s.slab > 0;
    if (channels_first) {
        // Computed per row of dx (every channel of it), just before that row's copy: the
        // copy then reads it from cache. (Computed whole, it went to DRAM and back: NCHW
        // mb_dw576s2_14 spent 39 % of its call in the copy.) The rows are dx's parallel loops.
        out = s.dx_local;
        out.compute_at(s.dx, group_blocks ? n_i : local_row_blocks ? y_o : s.y);
        if (group_blocks) out.store_at(s.dx, vo);
        if (groups_vectorised) out.reorder_storage(s.g, s.c, s.x, s.y, s.z, s.n);
        // The transposing copy in blocks of (x vector) x vec: x vectors (contiguous stores), vec
        // unrolled channels (or groups) whose gathers share cache lines (see cpu_staging.h).
        // NCX, 32-bit (`rows_pass`): the channels a plain loop around each x vector, which the
        // TransposedRows pass makes contiguous loads of 8 channels per pixel and stores of
        // their shuffles (kernel alone, NCHW rn50_1x1_7: this copy 0.82 -> 0.62 ms).
        // Rows of at least `lanes` pixels take whole vectors of `lanes`, the last one shifted
        // inwards: a guarded vector predicates its gathers lane by lane, and with 7-pixel rows
        // every vector was one (NCHW mb_dw960_7: 39 % of the call in this copy). Narrower
        // rows than the smallest: the guarded vector.
        const Var v = groups_vectorised ? s.g : s.c;
        const auto copy = [&](Stage st, int lanes, TailStrategy tail) {
            if (group_blocks) {  // blocks of groups over runs of images (above)
                const auto nest = [&](Stage b, TailStrategy groups_tail) {
                    b.split(s.x, x_o, x_i, lanes, tail)
                        .split(v, vo, vi, vec, groups_tail)
                        .split(s.n, n_o, n_i, images_per_task, TailStrategy::GuardWithIf)
                        .reorder(x_i, vi, s.c, x_o, s.y, s.z, n_i, vo, n_o)
                        .vectorize(x_i)
                        .parallel(n_o)
                        .parallel(vo);
                };
                // Whole blocks (the last shifted inwards): the groups a plain loop around each
                // x vector, which TransposedRows makes loads of 8 groups per pixel and stores of
                // their shuffles. Fewer groups than a block: guarded, unrolled.
                Stage few = st.specialize(s.g_extent < vec);
                nest(few, TailStrategy::GuardWithIf);
                few.unroll(vi);
                nest(st, TailStrategy::ShiftInwards);
                return;
            }
            st.split(s.x, x_o, x_i, lanes, tail).split(v, vo, vi, vec, TailStrategy::GuardWithIf);
            if (local_row_blocks) {
                st.split(s.y, y_o, y_i, block_rows, TailStrategy::GuardWithIf)
                    .reorder(x_i, vi, s.g, x_o, vo, y_i, y_o, s.z, s.n)  // blocks of a plane's rows outermost
                    .vectorize(x_i).parallel(y_o).parallel(s.n);
                if (!s.rows_pass) st.unroll(vi);
                return;
            }
            st.reorder(x_i, vi, groups_vectorised ? s.c : s.g, x_o, vo, s.y, s.z, s.n)  // rows outermost
                .vectorize(x_i);
            if (!s.rows_pass) st.unroll(vi);
            parallel_rows(st);
        };
        for (int lanes = vec; lanes >= 4; lanes /= 2) {
            copy(s.dx.specialize(s.x_extent >= lanes), lanes, TailStrategy::ShiftInwards);
        }
        copy(s.dx, vec, TailStrategy::GuardWithIf);
    }

    // NXC and NXG: dy staged per block of `block_rows` dx rows, zero border included, in
    // cache (the rows the block's taps read; (block + 2) / block of them for 3x3). The tiles
    // then load dy without the boundary test (compares, clamps and a blend per FMA or per
    // broadcast). A whole staged copy before the tiles cost a pass over memory: more than it
    // saved for depthwise layers (memory bound), and rn50_1x1_56 copied 26 MB per call.
    // (The x-phase NXC variant keeps the whole copy: row blocks measured 10-15 % slower on
    // rn50_3x3s2_28, not understood yet.)
    // (The pointwise variant reads dy in place: nothing to stage.)
    // The in-place variant (nxg_ip: 3x3 depthwise, unit strides) reads dy in place too,
    // through its zero padding: Halide partitions each row's tiles and the rows so that
    // only the edges test, and the tiles' reads of dy interleave with their stores of dx,
    // where the staged copy was a phase of reads alone before a phase of compute and stores
    // (an Intel core's own traffic tops out near 26 GB/s, reads and writes together). Kernel
    // alone on a Xeon (bench/RESULTS.md, fifty-fourth session), float32, ms ratio staged / in
    // place: mb_dw32_112 1.26-1.29x, mb_dw144_56 1.15-1.24x, mb_dw192_28 1.20x, mb_dw960_7
    // 1.27x (AVX2 1.19-1.25x); batch 1, odd sizes and vector tails 1.10-1.22x. Not with larger
    // filters (5x5 0.50-0.79x, 7x7 0.71x) nor below a vector of groups (8: 0.89x): the
    // registry keeps those on nxg. (Its compile costs 2.5x nxg's: the partitioned loops.)
    const bool stage_row_blocks = (layout == Layout::NXG || (layout == Layout::NXC && !s.phased)) &&
                                  !s.staged_inputs && !s.pointwise && !s.dy_in_place;
    // Channel slabs: each slab's tiles run over `x_oi`, a run of the row's x tiles: all of
    // them when the slab's filter (c x taps per output channel) outweighs the block's staged
    // rows of dy (x per output channel), else one. With one tile per slab in turn, a row of
    // tiles streamed the whole packed filter once per x tile: rn50_1x1_7's 4 MB per 7
    // pixels, from L3. Over the whole row, the filter streams once per row and dy's rows
    // are re-read per slab from cache (kernel alone on a Xeon: rn50_1x1_7 1.73x,
    // dl_3x3_d2 1.44x, rn50_3x3_14 1.19x, NCHW alike; rn50_1x1_56, whose 3 MB rows of dy
    // outweigh its 64 KB filter, 0.95x that way, hence the test). With dy staged per block
    // of rows (NXC), each slab also runs over the block's rows (slab_rows, in the nest), so
    // the filter streams once per block: a 256 -> 256 3x3 filter is 2.4 MB, past the L2,
    // and was re-read from L3 for every row (kernel alone: rn50_3x3_14 1.19x, dl_3x3_d2
    // 1.19x, 512 -> 512 on 7x7 1.75x, 160 -> 320 on 15x15 1.28x; filters in L2 0.98-1.02x).
    Var x_oo("x_oo"), x_oi("x_oi");
    const Expr block_dy_rows = channels_first || s.pointwise ? Expr(1) : Halide::min(block_rows, s.y_extent);
    const Expr slab_outer = s.c_extent * s.kx_extent * s.ky_extent * s.kz_extent > block_dy_rows * s.x_extent;
    // Pointwise (nxc_pw) over few rows (a batch-1 layer's positions are one row, up to 512 of
    // them: runtime/src/execute.cpp) and a filter larger than dy (more dx channels than
    // positions): the threads' rows left threads idle, so there the slabs go in groups, each
    // about `pw_group_kb` of packed filter (at least 8 groups where there are 8 slabs), a
    // group the outermost parallel loop and the rows inside it; each group's part of the
    // filter stays in cache over the rows, and dy is read once per group. The groups are dx's
    // channels: nothing is summed across them. Kernel alone (AVX-512, 2 threads, ms ratio
    // rows / groups): 2048 <- 512 channels on 7x7 at batch 1 1.43-1.53x, 1024 <- 256 on 14x14
    // at batch 1 1.41x, 960 <- 320 on 7x7 at batch 3 1.17-1.19x (as one row 1.74x), rn50_1x1_7
    // as two rows of four images 1.01-1.04x. Where dy outweighs the filter, dy's re-reads
    // cost more than the rows' filter: 512 <- 128 on 28x28 at batch 1 (two rows) 0.85-0.93x;
    // and over many rows the rows' own tasks were faster (rn50_1x1_56 0.88-0.91x). Nor for
    // filters under 64 KB, whose calls take microseconds (576 <- 3 channels on 13 positions,
    // 5.5 us: 0.86x in groups).
    const bool slab_groups = s.pointwise && !channels_first;
    const int element_bytes = s.acc.output_types()[0].bytes();
    const Expr co_extent = s.r[0].extent(), positions = s.x_extent * s.y_extent * s.n_extent;
    const Expr grouped_slabs = s.y_extent * s.n_extent < 4 && s.c_extent > positions &&
                               s.c_extent * co_extent >= 64 * 1024 / element_bytes;
    const Expr slab_bytes = s.slab * co_extent * element_bytes, slabs = ceil_div(s.c_extent, s.slab);
    const Expr slab_group = Halide::max(1, Halide::min(s.tuned.get("pw_group_kb", 256) * 1024 / slab_bytes, ceil_div(slabs, 8)));
    Var v_oo("v_oo"), v_oi("v_oi");

    // The tiled loop nest: the vector dim `v` (c or g) split into its tile, x split into
    // `pixels`, rows parallel.
    const Var v = groups_vectorised ? s.g : s.c;
    const Expr v_extent = groups_vectorised ? s.g_extent : s.c_extent;
    Var &v_o = groups_vectorised ? g_o : c_o, &v_i = groups_vectorised ? g_i : c_i;
    // (grouped: the slab groups' nest, above.)
    auto nest_rows = [&](Stage st, int v_factor, int x_factor, bool grouped) {
        // Slab groups' tiles start on a slab: guarded, not shifted inwards at the end, so
        // that Halide knows it. (Shifted, a tile could start mid-slab for all Halide could
        // tell, and every tile carried a second slab's FMAs under a test in its reduction
        // loop: 48 accumulators where 24 are used, two of them spilled to the stack. Kernel
        // alone, rn50_1x1_7 1.25x. The rows' nest, guarded so too, ran rn50_1x1_56 0.40x:
        // bench/RESULTS.md, sixty-eighth session.)
        const TailStrategy v_tail = grouped && v_factor == s.slab ? TailStrategy::GuardWithIf : TailStrategy::Auto;
        st.split(v, v_o, v_i, v_factor, v_tail).split(s.x, x_o, x_i, x_factor);
        if (s.slab > 0) {
            const Expr x_tiles = (s.x_extent + x_factor - 1) / x_factor;
            st.split(x_o, x_oo, x_oi, select(slab_outer, x_tiles, 1), TailStrategy::GuardWithIf);
        }
        // Every dim listed (reorder() keeps unlisted ones in their old slots). x-phase
        // variant: the phase just outside the tiles, so every tile (pixels of one phase)
        // takes the same taps and its reduction has no per-pixel branch.
        // Groups inside the rows: a thread's row covers every group (grouped layers had one
        // parallel loop over y per (n, g), with tasks of a few microseconds: rx_g32_28 took
        // 5-13 ms from run to run).
        std::vector<VarOrRVar> loops = {v_i, x_i};
        if (groups_vectorised) loops.push_back(s.c);
        // Channel slabs over staged blocks of rows: each slab runs over every row of the
        // block, so the slab's filter is read once per block, not once per row.
        const bool slab_rows = s.slab > 0 && stage_row_blocks;
        if (slab_rows) {
            st.split(s.y, y_o, y_i, block_rows, TailStrategy::GuardWithIf);
            for (VarOrRVar d : {VarOrRVar(x_oi), VarOrRVar(y_i), VarOrRVar(v_o), VarOrRVar(x_oo)}) loops.push_back(d);
        } else if (local_row_blocks) {  // (dx_local spans a block of rows)
            for (VarOrRVar d : {VarOrRVar(x_oi), VarOrRVar(s.y), VarOrRVar(v_o), VarOrRVar(x_oo)}) loops.push_back(d);
        } else if (grouped) {
            st.split(v_o, v_oo, v_oi, slab_group, TailStrategy::GuardWithIf);
            for (VarOrRVar d : {VarOrRVar(x_oi), VarOrRVar(v_oi), VarOrRVar(x_oo)}) loops.push_back(d);
        } else if (s.slab > 0) {
            for (VarOrRVar d : {VarOrRVar(x_oi), VarOrRVar(v_o), VarOrRVar(x_oo)}) loops.push_back(d);
        } else {
            for (VarOrRVar d : {VarOrRVar(v_o), VarOrRVar(x_o)}) loops.push_back(d);
        }
        if (s.phased) loops.push_back(s.p);
        if (!groups_vectorised) loops.push_back(s.g);
        if (!local_row_blocks) loops.push_back(slab_rows ? y_o : s.y);
        for (VarOrRVar d : {VarOrRVar(s.z), VarOrRVar(s.n)}) loops.push_back(d);
        if (grouped) loops.push_back(v_oo);
        st.reorder(loops);
        if (grouped) st.parallel(v_oo);
        if (slab_rows) {
            st.parallel(y_o).parallel(s.n);
        } else if (stage_row_blocks) {
            st.split(s.y, y_o, y_i, block_rows, TailStrategy::GuardWithIf).parallel(y_o).parallel(s.n);
        } else if (!channels_first) {  // (channels first: in dx's parallel rows)
            parallel_rows(st);
        }
    };
    auto nest = [&](Stage st, int v_factor, int x_factor) {
        if (slab_groups) nest_rows(st.specialize(grouped_slabs), v_factor, x_factor, true);
        nest_rows(st, v_factor, x_factor, false);
    };
    // Branches, widest first: (vector-dim tile, vector width, pixels). Each keeps
    // (tile / width) x pixels accumulator chains in flight. Small groups (ResNeXt: 4-8
    // channels per group) use half-width vectors, still over a row of pixels: one chain per
    // output would leave the FMA pipes idle for its latency.
    struct Branch {
        Expr condition;
        int tile, lanes, pixels;
    };
    const int wide = groups_vectorised ? vec : vectors * vec;
    // Rows that are a multiple of 7 pixels (every ResNet and MobileNet stage: 7, 14, 28, 56,
    // 112) get 7-pixel tiles: a 6-pixel tile over a 7-wide row computes 12 pixels for 7.
    // The `any` variant (no contiguous dim: every vector would be a gather) is the rare
    // fallback: scalar only, which also keeps its compile time down (27 -> 3 s per target).
    const bool tiles = layout != Layout::Any;
    std::vector<Branch> branches;
    if (tiles && rows7) branches.push_back({v_extent >= wide && s.x_extent % 7 == 0, wide, vec, 7});
    if (s.slab > 0) {
        // Channel slabs: every tile is one slab wide (the registry sends whole slabs only;
        // the scalar nest below is then never taken, but stays correct).
        branches.push_back({v_extent >= wide && s.x_extent >= pixels, wide, vec, pixels});
        branches.push_back({v_extent >= wide, wide, vec, 1});
    } else if (tiles) {
        branches.push_back({v_extent >= wide && s.x_extent >= pixels, wide, vec, pixels});
        if (wide > vec) branches.push_back({v_extent >= vec && s.x_extent >= pixels, vec, vec, pixels});
        // Half vectors are for small groups of channels; depthwise layers with 8-15 groups
        // are rare enough not to pay their compile time (nor do 1-2 lanes: cpu_staging.h).
        const bool half_vectors = !groups_vectorised && half_vectors_pay(vec);
        if (half_vectors) branches.push_back({v_extent >= vec / 2 && s.x_extent >= pixels, vec / 2, vec / 2, pixels});
        branches.push_back({v_extent >= vec, vec, vec, 1});
        if (half_vectors) branches.push_back({v_extent >= vec / 2, vec / 2, vec / 2, 1});
    }
    for (const Branch &b : branches) {  // specialise before splitting: own factors, same names
        Stage st = out.specialize(b.condition);
        nest(st, b.tile, b.pixels);
        st.vectorize(v_i, b.lanes).unroll(x_i);  // stores only; the tile's math is in acc
    }
    nest(out, 1, 1);

    if (stage_row_blocks) {
        const std::vector<Var> a = s.dy_in.args();  // (co, x, y, z, g, n)
        stage_in_cache(s.dy_in, groups_vectorised ? a[4] : a[0], vec, LoopLevel(out, y_o));
        if (s.small_groups) {
            // The small-group variant: each group's rows apart (copied in the same order),
            // kSmallGroupChannels slots per pixel, so the tiles' pixels are a constant stride
            // apart (immediate offsets from one address) instead of every group's channels
            // (a run-time stride: each pixel's broadcasts needed an address of their own).
            // Kernel alone, rx_g32_28 (32 groups of 8): 2.40 -> 2.18 ms with the groups apart,
            // 1.84 with 16 slots too (1.78 with 8); its JIT kernel, every extent constant, 1.58.
            // Wider groups would fail the kernel (bound_storage; the registry sends none), and
            // 16 dy channels per group over 16 dx channels measured 0.87-0.98x (not understood;
            // copying the rows in storage order did not help), so the registry sends fewer.
            s.dy_in.reorder_storage(a[0], a[1], a[4], a[2], a[3], a[5]).bound_storage(a[0], kSmallGroupChannels);
        }
    }
    // Accumulators live per tile (its innermost loop): tile x pixels values, all in registers.
    s.acc.compute_at(out, s.slab > 0 ? x_oi : v_o);
    // Channel slabs: Halide is told that a tile starts on a slab and spans one, so its reads
    // of w_pack (c % slab, c / slab) are dense vectors, not gathers, and the tile keeps a
    // constant size (registers). (The dx split shifts its last tile inwards, which a
    // whole number of slabs never does.)
    if (s.slab > 0) s.acc.align_bounds(s.c, s.slab).bound_extent(s.c, s.slab);
    if (groups_vectorised) {  // vectors contiguous
        if (s.phased) {
            s.acc.reorder_storage(s.g, s.c, s.x, s.p, s.y, s.z, s.n);
        } else {
            s.acc.reorder_storage(s.g, s.c, s.x, s.y, s.z, s.n);
        }
    }
    Var v_vo("v_vo"), v_vi("v_vi");
    // Innermost: the vector dim(s) and the tile's pixels, then the reduction. reorder() only
    // permutes the dims it is given, so every tile dim is listed (an unlisted v_vo stayed
    // outside the reduction and duplicated it per channel vector).
    const auto order = [&](Stage st, std::vector<VarOrRVar> inner) {
        inner.push_back(s.x);
        if (groups_vectorised) inner.push_back(s.c);
        for (const RVar &r : {co, kx, ky, kz}) inner.push_back(r);
        st.reorder(inner);
    };
    // GuardWithIf: Halide cannot tell, inside one dx branch, that acc's wider branches are
    // not taken, so their splits would round the tile up and make its allocation size
    // dynamic (a heap allocation per tile; the stem's scalar path ran 2x slower). The guard
    // costs nothing where it is taken: there the tile is a whole number of vectors.
    for (const Branch &b : branches) {
        s.acc.specialize(b.condition).split(v, v_vo, v_vi, b.lanes, TailStrategy::GuardWithIf)
            .vectorize(v_vi).unroll(v_vo).unroll(s.x);
        Stage st = s.acc.update().specialize(b.condition);
        st.split(v, v_vo, v_vi, b.lanes, TailStrategy::GuardWithIf);
        order(st, {v_vi, v_vo});
        st.vectorize(v_vi).unroll(v_vo).unroll(s.x);
        // A 3x3 filter's taps along x unrolled: its three taps read neighbouring vectors, which
        // LLVM then shares across the tile's pixels. Kernel alone: NHWC mb_dw32_112 1.11x,
        // mb_dw960_7 1.14x, mb_dw192_28 1.08x, NCHW mb_dw960_7 1.125x, rn50_3x3_14 1.02x,
        // bit-identical outputs. Depthwise 3x3 (its taps are the whole reduction): ky unrolled
        // too, the tile one straight run of 9 taps. Kernel alone, AVX-512, against kx alone:
        // NHWC 192 groups on 28x28 1.31x (the JIT kernel, every extent constant, had shown
        // 1.41x for the filter's size alone), on 112x112 1.13x, 960 on 7x7 1.09x, 64 groups
        // 1.02-1.07x, 144 1.03x; NCHW 192 1.13x, 32 1.09x, 960 1.01x; AVX2 192 1.21x, 32
        // 1.02x; but NHWC 32 groups 0.94x and 16 0.89-0.92x (not understood: gated on 4
        // vectors of groups or more, the 32-group layers ran 0.86x on their unchanged kx-only
        // tiles; an earlier test of ky unrolled had measured 1.02x and 0.97x).
        // (Variants given unit strides alone compile that branch alone: BwdDataStages::
        // unit_strides_only. The in-place one, nxg_ip, unit dilations too.)
        if (s.unit_strides_only()) {
            Stage unit = st.specialize(s.unit_stride);
            if (s.dy_in_place) {
                unit.specialize(s.square_2d(3) && s.unit_dilation).unroll(kx).unroll(ky);
                unit.specialize_fail("convgrad: the in-place data gradient takes 3x3 filters, unit dilations alone");
            }
            st.specialize_fail("convgrad: this data gradient takes unit strides alone");
            continue;
        }
        if (s.may_take_unit_strides()) {
            Stage unit = st.specialize(s.unit_stride);
            if (groups_vectorised) unit.specialize(s.square_2d(3) && s.unit_dilation).unroll(kx).unroll(ky);
            unit.specialize(s.kx_extent == 3 && s.unit_dilation).unroll(kx);
        }
        // Stride 2: the taps' grid test becomes a bit test. At run time it was an idiv per
        // pixel and tap (without the x-phase view, NCHW mb_dw576s2_14 ran at 0.15x oneDNN),
        // and with it one per row: kernel alone, NHWC mb_dw576s2_14 1.25x, mb_dw96s2_112
        // 1.06x, rn50_3x3s2_28 1.01x. (With a 3x3 filter's taps unrolled too: 1.51x, 0.91x.)
        // Depthwise 3x3 at stride 2: ky unrolled (each row's taps a test per row, not per tap).
        // Kernel alone against the loop: NHWC mb_dw96s2_112 1.21x, mb_dw576s2_14 1.25-1.28x,
        // 144 groups over 56x56 1.37x, 240 over 28x28 1.36x, 32 over 112x112 1.16x, 16 over
        // 64x64 1.08x; AVX2 mb_dw96s2_112 1.70x; NCHW (ncg) 1.08x, 1.10x. (kx and ky both
        // unrolled: 0.76x and 1.14x; kx alone 1.03x and 0.94x; the filter's size constant,
        // loops kept, 1.16x and 1.00x.) Adding this branch cost mb_dw32_112's unit-stride
        // tiles, unchanged, 0.90x kernel alone: see the note on 32 groups above.
        Stage stride_2 = st.specialize(s.stride_2);
        if (groups_vectorised) stride_2.specialize(s.square_2d(3) && s.unit_dilation).unroll(ky);
    }
    // Fewer channels than half a vector (an RGB stem's 3): one output per step, its long
    // reduction over output channels split into vector lanes (rfactor) and summed after.
    // Left to LLVM, this loop was vectorised or not depending on unrelated schedule changes
    // (rn50_stem: 227 vs 514 ms).
    RVar co_o("co_o"), co_i("co_i");
    Var lane("lane");
    order(s.acc.update(), {v});
    if (!tiles) {
        if (s.may_take_unit_strides()) s.acc.update().specialize(s.unit_stride);
        return;
    }
    Func lanes = s.acc.update().split(co, co_o, co_i, vec, TailStrategy::GuardWithIf).rfactor(co_i, lane);
    lanes.compute_at(s.acc, Var::outermost()).vectorize(lane);
    lanes.update().reorder(lane, co_o, kx, ky, kz).vectorize(lane);
    if (s.may_take_unit_strides()) lanes.update().specialize(s.unit_stride);

    // The filter, packed once so the vector dim is contiguous for each (co, tap) whatever the
    // user's filter layout (HWIO has c strided by C_out; OIX has g strided by C_out/G*taps).
    // Vectors gather along the packed dim; the unrolled output channels after it reuse their
    // cache lines (HWIO has ci strided by C_out). In parallel (done serially, packing
    // rn50_1x1_7's 4 MB filter took a fifth of the call), over one loop outside every other:
    // with the parallel loop inside the tap and group loops, each (tap, group) was a thread-pool
    // launch of its own, 9 for a 3x3 filter and 288 for rx_g32_28's. A depthwise filter (taps x
    // groups, a few KB) is packed serially: its launches had cost mb_dw960_7 a fifth of its call.
    const std::vector<Var> w_args = s.w_local.args();  // (ci, co, kx, ky, kz, g)
    if (groups_vectorised) {
        s.w_local.compute_root()
            .reorder_storage(w_args[5], w_args[0], w_args[1], w_args[2], w_args[3], w_args[4])
            .vectorize(w_args[5], vec, TailStrategy::GuardWithIf);
        return;
    }
    // Vectors along the packed dim `ci` (gathers), the `vec` unrolled output channels after
    // it, then the `outer` loops, then one parallel loop over `task_a` and `task_b` fused.
    Var wv_o("wv_o"), wv_i("wv_i"), wco_o("wco_o"), wco_i("wco_i"), task("task");
    const auto pack = [&](Func f, const Var &ci, const Var &co, const std::vector<VarOrRVar> &outer,
                          const Var &task_a, const Var &task_b) {
        std::vector<VarOrRVar> order = {wv_i, wco_i, wv_o};
        order.insert(order.end(), outer.begin(), outer.end());
        order.insert(order.end(), {task_a, task_b});
        f.compute_root()
            .split(ci, wv_o, wv_i, vec, TailStrategy::GuardWithIf)
            .split(co, wco_o, wco_i, vec, TailStrategy::GuardWithIf)
            .reorder(order)
            .fuse(task_a, task_b, task)
            .vectorize(wv_i).unroll(wco_i).parallel(task);
    };
    // HWIO (output channels contiguous, s.w_co_stride 1): a serial loop over them inside each
    // vector of input channels, which the TransposedRows pass (generators/transposed_rows.h,
    // NXC pipelines) turns into loads of 8 consecutive output channels from each of the
    // vector's rows, transposed in registers, instead of 16 scalar loads per vector (kernel
    // alone, rn50_1x1_7's 4 MB filter: the packing 14 -> 10 % of the call, 1.02-1.04x in all;
    // rn50_3x3s2_28's 590 KB, 1 % of its call, 1.00x). One parallel loop over the vectors of
    // input channels and `outer` fused; `also`: the rest of the condition (w_pack's whole
    // slabs: no clamp on the channel).
    const auto transposing_pack = [&](Func f, const Var &ci, const Var &co, const std::vector<VarOrRVar> &taps,
                                      const std::vector<Var> &outer, const Expr &also) {
        std::vector<VarOrRVar> order = {wv_i, co};
        order.insert(order.end(), taps.begin(), taps.end());
        order.push_back(wv_o);
        order.insert(order.end(), outer.begin(), outer.end());
        Stage st = f.specialize(also && s.w_co_stride == 1);
        st.split(ci, wv_o, wv_i, vec, TailStrategy::GuardWithIf).reorder(order).vectorize(wv_i);
        Var fused = wv_o;
        for (size_t i = 0; i < outer.size(); i++) {
            Var next("wp_task" + std::to_string(i));
            st.fuse(fused, outer[i], next);
            fused = next;
        }
        st.parallel(fused);
    };
    if (s.slab > 0) {  // w_pack (w_local inlined into it), in parallel over (slab, group)
        const std::vector<Var> p = s.w_pack.args();  // (ci_i, co, kx, ky, kz, ci_o, g)
        transposing_pack(s.w_pack, p[0], p[1], {p[2], p[3], p[4]}, {p[5], p[6]}, s.whole_slabs);
        pack(s.w_pack, p[0], p[1], {wco_o, p[2], p[3], p[4]}, p[5], p[6]);
        // OIX 1x1 filters in whole slabs: input channels contiguous, so each vector is one
        // load (unclamped, see the generator), not 16 (kernel alone, NCHW rn50_1x1_7's 4 MB
        // filter: 0.93 -> 0.31 ms of packing, 1.03-1.06x in all).
        s.w_pack.specialize(s.whole_slabs && s.w_ci_stride == 1);
        return;
    }
    transposing_pack(s.w_local, w_args[0], w_args[1], {w_args[2], w_args[3], w_args[4]}, {w_args[5]}, Internal::const_true());
    pack(s.w_local, w_args[0], w_args[1], {w_args[2], w_args[3], w_args[4]}, wco_o, w_args[5]);
}

}  // namespace convgrad::gen
