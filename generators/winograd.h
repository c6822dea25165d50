// The Winograd variants of both gradients (nxc_wg): 3x3 filters (2-D, or in each depth slice
// of 3-D layers, whose depth taps run directly), unit strides and dilations, channels
// contiguous (the registry's promise, runtime/src/kernel_table.cpp).
// The data gradient's algorithm first; the filter gradient's is its transpose (below).
//
// With unit strides the data gradient is a correlation of dy with the filter turned by 180
// degrees: dx[i] = sum over k of dy[i + pb - 2 + k] * w[2 - k] along each axis, with dy zero
// outside. Winograd's minimal filtering F(4x4, 3x3) (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016) computes a 4x4 tile of it from a 6x6 tile of dy with
// 36 multiplies per (dy channel, dx channel) pair instead of 144:
//   V = B^T d B   (dy's tile; per tile and dy channel)
//   U = G g G^T   (the turned filter; per dx and dy channel, once per call)
//   M(nu, xi) = sum over dy channels of U(nu, xi) * V(nu, xi)   (36 matrix products)
//   Y = A^T M A   (dx's 4x4 tile)
// The matrix products are where the time goes; the transforms are adds and a few multiplies
// by constants, unrolled per tile. This is oneDNN's own choice for these layers
// (`jit_wino_4x3`), which runs them 1.8-2.7x faster than its direct kernels.
//
// Numerics: the transforms' constants (up to 8 and 1/24) grow the rounding error: on
// rn50_3x3_14 with random inputs the largest error was 4.0e-4 against values up to 56
// (F(2x2, 3x3): 3.3e-5), within the tests' relative 1e-5 (tests/tf_edge_test.cpp).
#pragma once

#include <functional>
#include <vector>

#include "generator_common.h"

namespace convgrad::gen {

// F(kWinogradTile x kWinogradTile, 3x3): each tile reads kWinogradInput = tile + 2 rows and
// columns of dy.
constexpr int kWinogradTile = 4;
constexpr int kWinogradInput = kWinogradTile + 2;
// 3-D layers: the most depth taps (the data gradient keeps this many slices of dy's
// transformed tiles; the runtime's kWinogradMaxDepthTaps).
constexpr int kWinogradMaxDepthTaps = 4;

// Lavin & Gray's F(4x4, 3x3) matrices: B^T (dy's or x's tile), G (the filter), A^T (the
// output tile).
inline constexpr double kWinogradBT[kWinogradInput][kWinogradInput] = {
    {4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0}, {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
inline constexpr double kWinogradG[kWinogradInput][3] = {{1. / 4, 0, 0},          {-1. / 6, -1. / 6, -1. / 6},
                                                         {-1. / 6, 1. / 6, -1. / 6}, {1. / 24, 1. / 12, 1. / 6},
                                                         {1. / 24, -1. / 12, 1. / 6}, {0, 0, 1}};
inline constexpr double kWinogradAT[kWinogradTile][kWinogradInput] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

// sum over k < cols of coef[i * cols + k] * term(k) (coef row-major, `rows` rows), one case
// per row i, selected by `row` (which the schedules unroll, so each case is its own few adds):
// zero coefficients dropped, +-1 folded.
inline Expr winograd_rows(const Expr &row, const double *coef, int rows, int cols, const Type &type,
                          const std::function<Expr(int)> &term) {
    std::vector<Expr> cases;
    for (int i = 0; i < rows; i++) {
        Expr sum;
        for (int k = 0; k < cols; k++) {
            const double cf = coef[i * cols + k];
            if (cf == 0) continue;
            const Expr t = term(k);
            const Expr ct = cf == 1 ? t : cf == -1 ? -t : t * Halide::cast(type, Expr(cf));
            sum = sum.defined() ? sum + ct : ct;
        }
        cases.push_back(sum.defined() ? sum : Halide::cast(type, 0));
    }
    return mux(row, cases);
}

// winograd_rows in the element type `type` (the generators' accumulator type).
inline std::function<Expr(const Expr &, const double *, int, int, const std::function<Expr(int)> &)> winograd_rows_in(
    const Type &type) {
    return [type](const Expr &row, const double *coef, int rows, int cols, const std::function<Expr(int)> &term) {
        return winograd_rows(row, coef, rows, cols, type, term);
    };
}

// Tile t's place, tiles numbered flat over (tile x, tile y, image), so a block of whole tile
// rows or images is one run of them. (The image is clamped: tiles past the batch's end, in
// the schedules' last block, take rows past the last image's, zeros.) The tile row is
// t / tiles_x less the image's rows, not modulo them: Halide's bounds of a modulo are the
// whole image, so a staged copy of a block's rows (NCX's) copied every row of the image for
// every block; of the difference they are the block's rows where it lies in one image.
struct WinogradTile {
    Expr x, y, n;
};
inline WinogradTile winograd_tile(const Expr &t, const Expr &tiles_x, const Expr &tiles_y, const Expr &images) {
    const Expr n = min(t / (tiles_x * tiles_y), images - 1);
    return {t % tiles_x, t / tiles_x - n * tiles_y, n};
}

// The Winograd kernels' buffers: two activations of `layout` (NXC or NCX) and the filter (or
// its gradient), 3x3 in each depth slice (the registry's promise; Halide checks it).
template<typename Act0, typename Act1, typename Filter>
void constrain_winograd_buffers(Act0 &a0, Act1 &a1, Filter &f, Layout layout) {
    using namespace canonical;
    constrain_activation_strides(a0, layout);
    constrain_activation_strides(a1, layout);
    constrain_filter_strides(f, layout);
    // NCX: any pixel stride (the kernels copy the activations channels innermost, through
    // TransposedRows where it is 1): the runtime's dilation phases (every other pixel) too.
    if (layout == Layout::NCX) {
        a0.dim(kX).set_stride(Expr());
        a1.dim(kX).set_stride(Expr());
    }
    f.dim(kKx).set_bounds(0, 3);
    f.dim(kKy).set_bounds(0, 3);
}

struct WinogradDataStages {
    // Tiles t are flat over (tile x, tile y, image); z is the depth slice (1 in 2-D layers).
    Func dx;      // (c, x, y, z, g, n): Y read out of its tiles (NCX: dx_tiles, transposed)
    Func dx_tiles;  // NCX: Y read out of its tiles, channels innermost (NXC: dx itself)
    Func dy_rows;   // NCX: dy's rows that a block's tiles read, channels innermost (undefined in NXC)
    Func out_rows;  // (c, nu, jy, t, z, g): A^T M along y, per tile
    Func m;       // (c, nu, xi, t, z, g): the 36 matrix products, tiles in flat order
    Func m_acc;   // m's accumulator (register tiles)
    Func v;       // (co, nu, xi, t, z, g): dy's transformed tiles (z: dy's slice)
    Func v_rows;  // (co, a, nu, t, z, g): B^T d along x, per row a of the tile
    Func u;       // (c, co, nu, xi, kz, g): the transformed filter
    Func u_rows;  // (c, co, nu, ky, kz, g): G g along x
    Func w_local;  // (c, co, kx, ky, kz, g): the filter, dx channels innermost
    Var c{"c"}, co{"co"}, x{"x"}, y{"y"}, z{"z"}, g{"g"}, n{"n"};
    Var nu{"nu"}, xi{"xi"}, a{"a"}, t{"t"}, jy{"jy"}, kx{"kx"}, ky{"ky"}, kz{"kz"};
    RDom r;       // (dy channels, depth taps): m's reduction
    Expr tiles_x, tiles_y;  // dx's tiles along x and y (those that can be nonzero)
    Expr images;            // the batch
    Expr kz_extent;         // the depth taps (1 in 2-D layers)
    Expr w_co_stride;       // the filter's output-channel stride (1 in TF's HWIO)
    Expr w_kx_stride;       // the filter's stride along x (1 in OIHW)
    Expr dy_x_stride, dx_x_stride;  // NCX: the pixel strides (1 but in the runtime's dilation phases)
    bool channels_first = false;  // NCX (ncx_wg): dy and dx transposed through a block's copies
    ScheduleParams tuned;
    // Tiles per block (tiles whose transformed dy and products stay in cache while the
    // products read the whole transformed filter): whole tile rows of one image when an image
    // has at least this many tiles, else whole images.
    int block_tiles() const { return tuned.get("wg_tiles", 16); }
};

void schedule_bwd_data_cpu_winograd(WinogradDataStages &s, const Target &target);

// The filter gradient's Winograd (nxc_wg, the same layers): by the transposition of the
// algorithm above, per 4x4 tile of dy and its 6x6 tile of x,
//   dW = G^T [ sum over tiles of (A dY A^T) .* (B^T X B) ] G
// i.e. 36 matrix products that reduce over the tiles (x's channels by dy's), then the
// filter's 3x3 taps out of each channel pair's 6x6 sums.
struct WinogradFilterStages {
    // Tiles t are dy's, flat over (tile x, tile y, depth slice, image); kz is the depth tap
    // (3-D layers: x's tiles of the slice kz - pz past dy's).
    Func dw;                     // (ci, co, kx, ky, kz, g)
    Func dw_rows{"dw_rows"};     // (ci, co, kx, xi, kz, g): G^T M along nu
    Func sums{"sums"};           // (ci, co, nu, xi, kz, g): the chunks' partial sums added
    Func part{"part"};           // (ci, co, nu, xi, kz, g, k): chunk k's sum over its blocks
    Func block{"block"};         // (ci, co, nu, xi, kz, g, b): block b's sum over its tiles (register tiles)
    Func vx{"vx"};               // (ci, nu, xi, t, kz, g): x's transformed tiles, per depth tap
    Func vx_rows{"vx_rows"};     // (ci, a, nu, t, kz, g)
    Func wy{"wy"};               // (co, nu, xi, t, g): dy's transformed tiles (zero past the last tile)
    Func wy_rows{"wy_rows"};     // (co, a, nu, t, g)
    Var ci{"ci"}, co{"co"}, kx{"kx"}, ky{"ky"}, kz{"kz"}, g{"g"};
    Var nu{"nu"}, xi{"xi"}, a{"a"}, t{"t"}, k{"k"}, b{"b"};
    RDom r_tile, r_block, r_chunk;  // a block's tiles, a chunk's blocks, the chunks
    // NCX (ncx_wg): x and dy copied whole, channels innermost, before the tiles (undefined in NXC).
    Func x_copy, dy_copy;
    Expr ci_extent, co_extent;  // x's and dy's channels per group
    Expr x_x_stride, dy_x_stride;  // NCX: the pixel strides (1 but in the runtime's dilation phases)
    Expr chunks;                // r_chunk's extent
    bool channels_first = false;
    ScheduleParams tuned;
    // Tiles per block (its transformed x and dy stay in cache while the block's products run).
    int block_tiles() const { return tuned.get("wg_tiles", 32); }
};

void schedule_bwd_weights_cpu_winograd(WinogradFilterStages &s, const Target &target);

}  // namespace convgrad::gen
