// CPU schedule of the data gradient's small-group variant on x86 (nxc_sg with `pairs`: NXC,
// fewer than kSmallGroupChannels dy channels per group, an even number of groups; the AOT
// build has it for f32 and f64).
//
// nxc's tiles for small groups are one group wide: ResNeXt's 8 dx channels fill half an
// AVX-512 vector of f32, and rx_g32_28's data gradient ran at a quarter of the FMA peak.
// Here each vector holds a pair of groups, the group innermost: acc (gpar, c, x, y, z, gp, n)
// takes, per output channel and tap, one vector of the pair's filter (w_pairs, packed in that
// order) and per pixel one 64-bit broadcast of the pair's dy (dy_pairs: each pixel's two
// values per channel side by side), a load-port uop, no shuffle. dy_pairs is staged per
// block of rows, each pair's pixels contiguous with kSmallGroupChannels slots each (a
// constant pixel stride: the tile's broadcasts are immediate offsets from one address).
// dx is stored from acc one group at a time (half vectors, the lanes of one group).
// Kernel alone on rx_g32_28: 2.03 -> 1.11-1.16 ms (tiles 1.46 -> 0.60 ms, ~88 % of peak);
// suite 0.57x -> 1.05x oneDNN.
#include "../generators/bwd_data.h"
#include "cpu_staging.h"

namespace convgrad::gen {

void schedule_bwd_data_cpu_pairs(BwdDataStages &s, const Target &target) {
    const int vec = target.natural_vector_size(s.acc.output_types()[0]);
    const int half = vec / 2;  // dx channels of a group per vector
    // One vector of the pair's channels by `pixels` pixels: per (output channel, tap) one
    // filter vector and `pixels` broadcasts feed `pixels` FMA chains. 14 of 32 registers
    // with AVX-512 (rows of 28 and 56 are whole tiles), 6 of 16 otherwise; 7 or 3 pixels for
    // narrower rows.
    const bool wide_file = vector_registers(target) == 32;
    const int pixels = s.tuned.get("pixels", wide_file ? 14 : 6);
    const int short_pixels = wide_file ? 7 : 3;
    const int block_rows = s.block_rows();
    const RVar co = s.r[0], kx = s.r[1], ky = s.r[2], kz = s.r[3];

    struct Branch {
        Expr condition;
        int lanes, pixels;  // dx channels per vector (of each group), pixels per tile
    };
    std::vector<Branch> branches = {{s.c_extent >= half && s.x_extent >= pixels, half, pixels}};
    // (A tuned `pixels` at or below the short tile's has no use for it: the same condition
    // twice would be one specialisation split twice, a generator error.)
    if (short_pixels < pixels) branches.push_back({s.c_extent >= half && s.x_extent >= short_pixels, half, short_pixels});
    if (pixels > 1) branches.push_back({s.c_extent >= half, half, 1});
    // Groups of 5-7 channels with AVX-512 f32: half vectors. (Groups of at most
    // kPixelVectorChannels go to the pixel-vector kernels, so narrower targets and f64 have
    // no shape for such a branch.)
    if (half / 2 >= kPixelVectorChannels) branches.push_back({s.c_extent >= half / 2 && s.x_extent >= pixels, half / 2, pixels});

    // dx: tiles of (channels) x (pair) x (pixels), threads over blocks of rows (dy staged per
    // block) and images; every group of a row inside a thread's block, the pairs inside each
    // x tile, so consecutive tiles fill a pixel's line of dx after another (with the x tiles
    // inside, a pixel's lines were written 1 KB apart: 1.02-1.03x this way, though the
    // filter then cycles through L1 by pairs).
    Var c_o("c_o"), c_i("c_i"), x_o("x_o"), x_i("x_i"), gp("gp"), gpar("gpar"), y_o("y_o"), y_i("y_i");
    Func dx = s.dx;
    const auto nest = [&](Stage st, int c_factor, int x_factor) {
        st.split(s.c, c_o, c_i, c_factor)
            .split(s.x, x_o, x_i, x_factor)
            .split(s.g, gp, gpar, 2, TailStrategy::GuardWithIf)
            .reorder(c_i, gpar, x_i, c_o, gp, x_o, s.y, s.z, s.n)
            .unroll(gpar)
            .unroll(x_i)
            .split(s.y, y_o, y_i, block_rows, TailStrategy::GuardWithIf)
            .parallel(y_o)
            .parallel(s.n);
    };
    for (const Branch &b : branches) {  // specialise before splitting: own factors, same names
        Stage st = dx.specialize(b.condition);
        nest(st, b.lanes, b.pixels);
        st.vectorize(c_i);
    }
    nest(dx, 1, 1);

    // acc per tile, in registers: vectors of (gpar, c), the pair innermost (nested vectors).
    // (bound: both groups of the pair and one pair, a constant size (else a heap allocation
    // per tile, and acc out of registers); GuardWithIf keeps the channel tile
    // constant too, see cpu_bwd_data.cpp.)
    s.acc.compute_at(dx, c_o).bound(s.gpar, 0, 2).bound_extent(s.gp, 1);
    Var c_vo("c_vo"), c_vi("c_vi");
    const auto tile = [&](Stage st, int lanes, bool update) {
        st.split(s.c, c_vo, c_vi, lanes, TailStrategy::GuardWithIf);
        std::vector<VarOrRVar> order = {s.gpar, c_vi, c_vo, s.x};
        if (update) {
            for (const RVar &r : {co, kx, ky, kz}) order.push_back(r);
        }
        st.reorder(order).vectorize(c_vi).vectorize(s.gpar).unroll(c_vo).unroll(s.x);
    };
    for (const Branch &b : branches) {
        tile(s.acc.specialize(b.condition), b.lanes, false);
        Stage st = s.acc.update().specialize(b.condition);
        tile(st, b.lanes, true);
        Stage unit = st.specialize(s.unit_stride);
        if (b.pixels == pixels) {
            // A row of 3 taps inside the output channels: the pixels' broadcasts of dy at a
            // tap are the next taps' too (x + 1 - kx), so each load feeds three FMAs
            // (rx_g32_28 kernel alone 1.12-1.14x; tiles 0.91 -> 0.60 ms).
            Stage row = unit.specialize(s.unit_dilation).specialize(s.kx_extent == 3);
            row.reorder(s.gpar, c_vi, c_vo, s.x, kx, co, ky, kz).unroll(kx);
        }
        st.specialize(s.stride_2);  // (the taps' grid test a bit test: cpu_bwd_data.cpp)
    }
    s.acc.update().reorder(s.gpar, s.c, s.x, co, kx, ky, kz);
    s.acc.update().specialize(s.unit_stride);

    // dy_pairs per block of rows, zero border included, copied along dy's rows into each
    // pair's rows (a pair's plane at a time where its channels are half a vector: co, w's
    // output channels, the copy's channels).
    const std::vector<Var> a = s.dy_pairs.args();  // (gpar, c, x, y, z, gp, n)
    s.dy_pairs.compute_at(dx, y_o).bound(a[0], 0, 2).bound_storage(a[1], kSmallGroupChannels);
    // (Narrower vectors' half has at most kPixelVectorChannels: such groups take the
    // pixel-vector kernels, and the specialisation would only cost generation time.)
    copy_pairs_along_rows(s.dy_pairs, s.dy_g_stride, vec, false, half > kPixelVectorChannels ? co.extent() : Expr());

    // The filter packed once, (gpar, ci) innermost: a tile's filter vector is one load.
    const std::vector<Var> w = s.w_pairs.args();  // (gpar, ci, co, kx, ky, kz, gp)
    s.w_pairs.compute_root()
        .bound(w[0], 0, 2)
        .reorder(w[1], w[0], w[2], w[3], w[4], w[5], w[6])
        .vectorize(w[1], half, TailStrategy::GuardWithIf)
        .unroll(w[0])
        .parallel(w[6]);
}

}  // namespace convgrad::gen
