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
// Numerics: the transforms' constants (up to 8 and 1/24) grow the rounding error; on random
// inputs it is ~10x a direct sum's (tests/ take it with a tolerance scaled by the sum of
// magnitudes).
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
    Var c{"c"}, co{"co"}, x{"x"}, y{"y"}, z{"z"}, g{"g"}, n{"n"};
    Var nu{"nu"}, xi{"xi"}, a{"a"}, t{"t"}, jy{"jy"}, ky{"ky"};
    RDom r;       // dy channels (m's reduction)
    Expr tiles_x, tiles_y;  // dx's tiles along x and y
    ScheduleParams tuned;
    // Tiles per block (the tile rows of one image whose transformed dy and products stay in
    // cache): blocks take whole rows of tiles, at least this many tiles when the image has them.
    int block_tiles() const { return tuned.get("wg_tiles", 16); }
};

void schedule_bwd_data_cpu_winograd(WinogradDataStages &s, const Target &target);

}  // namespace convgrad::gen
