// The Winograd variant of the data gradient (nxc_wg): 2-D 3x3 filters, unit strides and
// dilations, channels contiguous (the registry's promise, runtime/src/kernel_table.cpp).
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

#include "generator_common.h"

namespace convgrad::gen {

// F(kWinogradTile x kWinogradTile, 3x3): each tile reads kWinogradInput = tile + 2 rows and
// columns of dy.
constexpr int kWinogradTile = 4;
constexpr int kWinogradInput = kWinogradTile + 2;

struct WinogradDataStages {
    Func dx;      // (c, x, y, z, g, n): Y read out of its tiles
    Func out_rows;  // (c, nu, jy, t, g): A^T M along y, per tile
    Func m;       // (c, nu, xi, t, g): the 36 matrix products, tiles in flat order
    Func m_acc;   // m's accumulator (register tiles)
    Func v;       // (co, nu, xi, t, g): dy's transformed tiles
    Func v_rows;  // (co, a, nu, t, g): B^T d along x, per row a of the tile
    Func u;       // (c, co, nu, xi, g): the transformed filter
    Func u_rows;  // (c, co, nu, ky, g): G g along x
    Func w_local;  // (c, co, kx, ky, g): the filter, dx channels innermost
    Var c{"c"}, co{"co"}, x{"x"}, y{"y"}, z{"z"}, g{"g"}, n{"n"};
    Var nu{"nu"}, xi{"xi"}, a{"a"}, t{"t"}, jy{"jy"}, kx{"kx"}, ky{"ky"};
    RDom r;       // dy channels (m's reduction)
    Expr tiles_x, tiles_y;  // dx's tiles along x and y (those that can be nonzero)
    Expr images;            // the batch
    Expr w_co_stride;       // the filter's output-channel stride (1 in TF's HWIO)
    ScheduleParams tuned;
    // Tiles per block (tiles whose transformed dy and products stay in cache while the
    // products read the whole transformed filter): whole tile rows of one image when an image
    // has at least this many tiles, else whole images.
    int block_tiles() const { return tuned.get("wg_tiles", 16); }
};

void schedule_bwd_data_cpu_winograd(WinogradDataStages &s, const Target &target);

}  // namespace convgrad::gen
