// CPU schedules of the data gradient's pixel-vector variants (_px), vectorised over pixels
// along x instead of channels.
//
// nxc_px, nxc_s2_px, ncx_px, ncx_s2_px: layers with at most kPixelVectorChannels input
// channels per group, like the RGB stem of every ImageNet network. Vectors over channels
// would be mostly empty there (3 of 16 lanes), and the channel-vector schedule fell back to
// one output at a time (rn50_stem: 150 ms, 0.17x oneDNN). Here a register tile holds
// C channels x `px_vectors` (or, for narrower rows, 2 or 1) vectors of pixels along x: per
// (output channel, tap) it loads one vector of dy per pixel vector and broadcasts C filter
// values into C x vectors FMAs.
//   - dy is staged per block of rows with x innermost, so each vector of pixels is one
//     contiguous load (NXC dy has x at a stride of C_out: transposed; NCX: copied with its
//     zero border).
//   - Stride 2 along x runs on the x-phase view (x = 2q + p, tiles over q), so all pixels of
//     a tile take the same taps; stride 1 drops the tap predicate (unit-stride
//     specialisation). The registry sends no other strides here.
//   - NXC: the tile stores C x px_vectors vectors interleaved (dx's channels contiguous).
//     NCX: one run of pixels per channel; with stride 2 both phases are in the tile and
//     interleave.
//
// ncg_s2_px: depthwise layers in channels-first layouts (NCHW: x contiguous, one channel per
// group) with stride 2 along x (the x-phase view), rows of at least one vector (the
// registry's rules). Each plane (g, n) is a small image of its own: tiles of px_vectors
// vectors along a row, per tap one contiguous load of dy and one broadcast filter value per
// vector. dy is staged per plane with its zero border, x innermost: zeros, then the rows
// copied over them (rows_over_zeros). The channel-vector ncg kernel, which reads transposed
// copies of dy and dx, ran mb_dw96s2_112 1.6x slower; with unit strides it beat this one's
// tiles of several rows 1.2-7x since its copies transpose in 128-bit lanes (the unit-stride
// ncg_px was removed: bench/RESULTS.md, thirty-seventh session).
#include "../generators/bwd_data.h"
#include "cpu_staging.h"

namespace convgrad::gen {
namespace {

// What every pixel-vector tile shares. Its stores: vectors of pixels, unrolled, and with
// both x phases in the tile (`phases_in_tile`) the phase just outside the vectors, so each
// vector's two stride-2 stores interleave into contiguous ones. Its accumulators (computed
// per tile at dx's x_o): channels (split by `channels`, the widest tile, guarded: a constant
// loop to unroll in every branch, the guards folding where the tile's channel count is a
// constant) x pixel vectors, reduced over (output channel, taps) with the phase outside the
// taps, so the taps' predicate folds to one test per tap.
struct PixelTile {
    BwdDataStages &s;
    int vec, channels;
    bool phases_in_tile;
    Var x_v{"x_v"}, x_l{"x_l"}, xv_o{"xv_o"}, xv_i{"xv_i"}, c_o{"c_o"}, c_i{"c_i"};

    void stores(Stage st, const Var &x_i) const {
        st.split(x_i, x_v, x_l, vec).vectorize(x_l).unroll(x_v);
        if (phases_in_tile) st.reorder(x_l, s.p, x_v).unroll(s.p);
    }
    // stride_2_taps: a branch for stride 2 along x and y (x-phase variants).
    void accumulators(const Var &x_o, bool stride_2_taps = false) const {
        const std::vector<VarOrRVar> pure = {xv_i, xv_o, c_i, c_o};
        s.acc.compute_at(s.dx, x_o).reorder_storage(s.x, s.c);
        s.acc.split(s.x, xv_o, xv_i, vec, TailStrategy::GuardWithIf)
            .split(s.c, c_o, c_i, channels, TailStrategy::GuardWithIf)
            .reorder(pure)
            .vectorize(xv_i).unroll(xv_o).unroll(c_i);
        Stage au = s.acc.update();
        au.split(s.x, xv_o, xv_i, vec, TailStrategy::GuardWithIf)
            .split(s.c, c_o, c_i, channels, TailStrategy::GuardWithIf);
        const RVar co = s.r[0], kx = s.r[1], ky = s.r[2], kz = s.r[3];
        std::vector<VarOrRVar> loops = pure;
        for (const RVar &r : {co, kx, ky, kz}) loops.push_back(r);
        if (phases_in_tile) {
            s.acc.unroll(s.p);
            loops.push_back(s.p);
            au.unroll(s.p);
        }
        au.reorder(loops).vectorize(xv_i).unroll(xv_o).unroll(c_i);
        // (A specialisation copies the schedule as it stands: these come last.)
        if (stride_2_taps) {
            // Stride 2 along y too (depthwise ncg_s2_px): each row's tap tests and output
            // rows are parities and halvings instead of divisions by a run-time stride, and
            // a square 3x3 undilated filter's taps unroll (kernel alone, mb_dw96s2_112:
            // 3.02 -> 2.35 ms, then 1.87; its JIT kernel 1.73). The NXC stem measured 3 %
            // slower with the stride specialised, so it is not.
            Stage s2 = au.specialize(s.stride_2);
            s2.specialize(s.square_2d(3) && s.unit_dilation).unroll(kx).unroll(ky);
        }
        // Unit strides: the tap predicate folds. (The x-phase tiles take stride 2 along x,
        // the others unit strides alone: BwdDataStages::unit_strides_only.)
        if (s.unit_strides_only()) {
            au.specialize(s.unit_stride);
            au.specialize_fail("convgrad: this pixel-vector data gradient takes unit strides alone");
        }
    }
};

// The pixel vectors of the tiles, widest first: px_vectors, 2 and 1 (rows narrower than
// the widest tile take the next; the last tile of a row shifts inwards).
std::vector<int> tile_vector_counts(int px_vectors) {
    std::vector<int> counts;
    for (int v = px_vectors; v >= 1; v = v > 2 ? 2 : v - 1) counts.push_back(v);
    return counts;
}

void schedule_depthwise_rows(BwdDataStages &s, int vec, int px_vectors) {
    const int block_rows = s.block_rows();
    const PixelTile tile{s, vec, 1, s.phased};
    Var x_o("x_o"), x_i("x_i"), y_o("y_o"), y_i("y_i");
    // Threads own planes (g, n); a plane's rows run in blocks of `block_rows`, the last one
    // guarded. s.x is q, and a tile holds both phases of its pixels, one row a tile: the rows
    // of a stride-2 tile would take different taps along y, and each row's test in the tap
    // loop cost more than the chains gained (mb_dw96s2_112: 3.5 -> 4.7 ms with two rows a
    // tile).
    auto nest = [&](Stage st, int pixels) {
        st.split(s.x, x_o, x_i, pixels).split(s.y, y_o, y_i, block_rows, TailStrategy::GuardWithIf);
        st.reorder(s.c, x_i, s.p, x_o, y_i, y_o, s.z, s.g, s.n).parallel(s.g).parallel(s.n);
    };
    // Tiles of px_vectors, 2 and 1 vectors (the last tile of a row shifts inwards).
    for (int vectors : tile_vector_counts(px_vectors)) {
        Stage st = s.dx.specialize(s.x_extent >= vectors * vec);
        nest(st, vectors * vec);
        tile.stores(st, x_i);
    }
    nest(s.dx, 1);
    // Staged per plane, one allocation a plane (malloc and free took ~10 % of mb_dw192_28's
    // 28x28 planes when each block had its own). Staged per block, the blocks' boundary
    // rows split the copy into five loop nests of clamped, selected loads, and the halo rows
    // were copied twice: per plane, kernel alone, 1.05-1.14x on 20- to 112-pixel planes and
    // 1.4-1.7x on 512- and 1024-pixel ones (a plane's copy then streams through L2 ahead
    // of its tiles, as a block's did).
    stage_rows_over_zeros(s.dy_in, LoopLevel(s.dx, s.z), vec);
    s.w_local.compute_root();
    // x vectors (of both phases), reduced over (multiplier, taps)
    tile.accumulators(x_o, true);
}

}  // namespace

void schedule_bwd_data_cpu_pixels(BwdDataStages &s, const Target &target, Layout layout) {
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    const int px_vectors = s.tuned.get("px_vectors", vector_registers(target) == 32 ? 4 : 2);
    if (layout == Layout::NCG) {
        schedule_depthwise_rows(s, vec, px_vectors);
        return;
    }
    Var x_o("x_o"), x_i("x_i"), co_o("co_o"), co_i("co_i"), c_o("c_o"), c_i("c_i"), y_o("y_o"), y_i("y_i");
    // (Pointwise: no staged blocks, so threads take rows, of the runtime's flattened
    // positions: with blocks of 8, a batch of one ran on one thread.)
    const int block_rows = s.pointwise ? 1 : s.block_rows();
    // The tile's loop and the one around it: runs of pixels (x_o) and channel tiles (c_o).
    // Pointwise (ncx_px_pw: dy in place): every channel tile of a run of pixels before the
    // next run, so the tiles share dy's block (its channels x the run) from cache.
    const Var &tile_loop = s.pointwise ? c_o : x_o, &around_tile = s.pointwise ? x_o : c_o;

    // The x-phase view in NCX (ncx_s2_px): both phases in the tile, p just outside the
    // vectors, so each vector's two stride-2 stores interleave into contiguous ones (NXC
    // stores channels x pixels contiguously with the phase outside the tile).
    const bool phases_in_tile = s.phased && layout == Layout::NCX;
    const int phases = phases_in_tile ? 2 : 1;
    // Threads own blocks of `block_rows` rows of an image, every group's and every plane's
    // (a parallel loop per group had tasks of microseconds); dy is staged per block (below).
    auto nest = [&](Stage st, int channels, int pixels) {
        st.split(s.c, c_o, c_i, channels).split(s.x, x_o, x_i, pixels).split(s.y, y_o, y_i, block_rows, TailStrategy::GuardWithIf);
        // NXC: channels innermost (contiguous in dx); NCX: outside the pixels (and phases).
        std::vector<VarOrRVar> loops = {x_i};
        if (phases_in_tile) loops.push_back(s.p);
        loops.insert(layout == Layout::NCX ? loops.end() : loops.begin(), c_i);
        for (const Var &d : {tile_loop, around_tile}) loops.push_back(d);
        if (s.phased && !phases_in_tile) loops.push_back(s.p);
        // z inside the blocks too: staged per (block, plane), a 3-D layer's 3x3x3 taps
        // re-staged each dy row 3.75 times (u3d_3x3x3_32: 8 % slower than one whole copy).
        for (const Var &d : {y_i, s.g, s.z, y_o, s.n}) loops.push_back(d);
        st.reorder(loops).parallel(y_o).parallel(s.n);
    };

    // dy staged per block of dx rows with its zero border (the rows the block's taps read),
    // x innermost, in cache: a whole staged copy before the tiles was a pass over memory
    // and, for NXC, DRAM-latency-bound gathers (ResNeXt's 4-channel groups at 56x56: 40 % of
    // the call). NXC: transposed, the gathers of each x vector (one channel, vec pixels)
    // unrolled over 4 channels so they share cache lines (over vec channels, as the whole
    // copy was, the gathers in every tile branch took the generator 150 s instead of 34).
    // NCX: rows copied as they are (over zeros: stage_rows_over_zeros).
    if (s.pointwise) {
        // Read in place. (Copied per run of pixels, every channel's run contiguous, it
        // measured the same: rn50_1x1_56 NCHW 3.61 against 3.64 ms.)
    } else if (layout == Layout::NCX) {
        stage_rows_over_zeros(s.dy_in, LoopLevel(s.dx, y_o), vec);
    } else {
        const std::vector<Var> a = s.dy_in.args();  // (co, x, y, z, g, n)
        s.dy_in.compute_at(s.dx, y_o)
            .reorder_storage(a[1], a[0], a[2], a[3], a[4], a[5])
            .split(a[1], x_o, x_i, vec, TailStrategy::GuardWithIf)
            .split(a[0], co_o, co_i, 4, TailStrategy::GuardWithIf)
            .reorder(x_i, co_i, x_o, co_o, a[2], a[3], a[4], a[5])
            .vectorize(x_i).unroll(co_i);
    }
    s.w_local.compute_root();

    // The tiles: (channels, pixel vectors), of px_vectors, 2 and 1 vectors (the last tile of
    // a row shifts inwards; rows narrower than a vector, which the registry sends only to
    // NXC, run one output at a time). NXC (at most 4 channels, the registry's rule): exactly
    // C channels. NCX takes any channel count:
    // each tile over as many channels as keep the accumulators within ~3/4 of the registers
    // (6 channels x 4 vectors with AVX-512), then fewer for narrow layers (the last channel
    // tile shifts inwards too). Per (output channel, tap): one load per vector and one
    // broadcast per channel feed channels x vectors FMAs.
    // (NXC had px_vectors only: rows narrower than 64 pixels, ResNeXt's 4-channel groups at
    // 56x56, ran one output at a time, 30x slower than oneDNN.)
    struct Tile {
        Expr condition;
        int channels, vectors;
    };
    std::vector<Tile> tiles;
    const int budget = vector_registers(target) * 3 / 4;
    int widest = kPixelVectorChannels;
    for (int v : tile_vector_counts(px_vectors)) {
        if (layout != Layout::NCX) {
            for (int ch = 1; ch <= kPixelVectorChannels; ch++) {
                tiles.push_back({s.c_extent == ch && s.x_extent >= v * vec, ch, v});
            }
            continue;
        }
        const int wide = std::max(1, std::min(8, budget / (v * phases)));
        widest = std::max(widest, wide);
        std::vector<int> counts = {wide};
        if (v == px_vectors) {
            for (int ch : {4, 3, 2}) {
                if (ch < wide) counts.push_back(ch);
            }
        }
        if (wide > 1) counts.push_back(1);
        for (int ch : counts) tiles.push_back({s.c_extent >= ch && s.x_extent >= v * vec, ch, v});
    }
    const PixelTile pixel_tile{s, vec, widest, phases_in_tile};
    for (const Tile &tile : tiles) {
        Stage st = s.dx.specialize(tile.condition);
        nest(st, tile.channels, tile.vectors * vec);
        // NXC: channels and pixels stored together, one contiguous run of channels x pixels.
        st.unroll(c_i);
        pixel_tile.stores(st, x_i);
    }
    nest(s.dx, 1, 1);
    pixel_tile.accumulators(tile_loop);
}

}  // namespace convgrad::gen
