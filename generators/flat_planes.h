// The flat-plane variants (ncg_fp): depthwise 2-D layers with unit strides in channels-first
// layouts (NCHW: each (group, image) plane contiguous), whose dx and dy planes have the same
// width. Such a plane is one flat row of H*W values: a tap is one constant offset in it,
// (ky * dilation - pad) * W + (kx * dilation - pad), and vectors run over the whole plane,
// row ends included. No row has a zero border of its own: reads before or after the plane
// are zeros (a boundary condition, which the schedules apply when they copy each plane into
// cache with the zeros above and below it), and a tap that crosses a row's end reads a
// neighbour row's pixel, which a per-column table selects away (select, not multiply: an
// infinity there must not become a NaN).
//
// The runtime passes each activation through its flat view (runtime/src/halide_bridge.cpp):
// x's extent is H*W, y's extent 1 and y's stride the row width W, which is how the kernel
// learns W. The registry sends only views whose rows are contiguous (y stride == W).
#pragma once

#include <functional>

#include "generator_common.h"

namespace convgrad::gen {

// The data gradient's stages: per tile of dx's flat plane, one partial sum per tap column
// kx (over ky), then the columns added where their column test passes.
struct FlatPlaneDataStages {
    Func dx;        // output, storage type
    Func acc;       // (i, g, n): the sum over kx of the column-tested partial sums
    Func part;      // (i, kx, g, n): the sum over ky of one tap column
    Func w_local;   // (kx, ky, g): the filter in the accumulator type
    Func col_ok;    // (i, kx): whether dx position i reads dy's row through tap column kx
    Func dy_in;     // (i, g, n): dy's plane in the accumulator type, zeros before and after it
    Var c{"c"}, i{"i"}, y{"y"}, z{"z"}, g{"g"}, n{"n"}, kx{"kx"}, ky{"ky"};
    RDom rkx, rky;
    Expr plane;     // dx's flat plane (H * W)
    Expr g_extent;  // groups (planes per image)
    Expr kx_extent, ky_extent;
    Expr unit_dilation;  // true when both dilations are 1: the taps' offsets differ by constants
    ScheduleParams tuned;
    Expr square_2d(int taps) const { return kx_extent == taps && ky_extent == taps; }
};

// The flat view's row width: x's extent is the plane, and y (extent 1) keeps its stride.
template<typename BufferLike>
Expr flat_row_width(const BufferLike &b) {
    return b.dim(canonical::kY).stride();
}

// A flat view's bounds: x holds the plane; y and z have extent 1 (2-D layers only).
template<typename BufferLike>
void constrain_flat_plane(BufferLike &b) {
    b.dim(canonical::kY).set_bounds(0, 1);
    b.dim(canonical::kZ).set_bounds(0, 1);
}

// A flat-plane variant's buffers: both activations channels-first with contiguous rows, seen
// flat (y and z of extent 1), and the filter's layout, one depth tap.
template<typename A, typename B, typename F>
void constrain_flat_plane_buffers(A &a, B &b, F &filter) {
    constrain_activation_strides(a, Layout::NCG);
    constrain_activation_strides(b, Layout::NCG);
    constrain_flat_plane(a);
    constrain_flat_plane(b);
    constrain_filter_strides(filter, Layout::NCG);
    filter.dim(canonical::kKz).set_bounds(0, 1);
}

// The row of position i of a flat plane of rows of `width` (i / width), for tables computed
// once per call: a division by a run-time width is one per lane, so the row comes from a
// float64 quotient instead, exact for any plane below 2^40 positions (the +0.5 keeps exact
// multiples off the floor's edge).
inline Expr flat_plane_row(const Expr &i, const Expr &width) {
    return Halide::cast<int>(floor((Halide::cast<double>(i) + Expr(0.5)) / Halide::cast<double>(width)));
}

// Per position i of a flat plane of rows of `width` (x = i % width) and tap column k:
// inside(x, k). A table computed once per call (schedules: compute_column_test).
inline Func column_test(const std::string &name, const Expr &width,
                        const std::function<Expr(const Expr &x, const Expr &k)> &inside) {
    Func f(name);
    Var i("i"), k("k");
    f(i, k) = inside(i - flat_plane_row(i, width) * width, k);
    return f;
}

// The filter gradient's stages (ncg_fp filter gradient: depthwise NCHW with unit strides,
// x and dy of one width, each activation's planes dense within an image). The runtime passes
// each activation through its flat-row view (runtime/src/halide_bridge.cpp): x's extent spans
// an image's every plane, G * H * W, one row, and g keeps its extent G with the plane as its
// stride, which is how the kernel learns the plane. Each of dy's planes is cut into vectors
// of the target's natural width; per position lane and tap, the products are summed over the images
// with x read in place at the tap's constant offset: a vector past its plane's end, or a tap
// past a row's, reads the neighbouring plane or row, and a per-(position, tap) mask (select
// semantics, by bits: an infinity there must not become a NaN) keeps only the true taps'
// sums, once per group rather than per product. The first and last groups, whose reads
// reach past the image's row, take the same sums through a zero boundary (`edge_*`, two
// groups).
struct FlatPlaneFilterStages {
    Func dw;         // output, storage type
    Func part;       // (l, v, kx, ky, g): the sum over images of vector v's lane l, tap (kx, ky)
    Func lanes;      // (l, kx, ky, g): part masked and summed over the vectors
    Func sum;        // (kx, ky, g): lanes summed across the vector
    Func edge_part, edge_lanes, edge_sum;  // the same for the first and last groups (e = 0, 1)
    Func mask;       // (l, v, kx, ky): all ones where the position reads x inside its plane
    Var l{"l"}, v{"v"}, kx{"kx"}, ky{"ky"}, g{"g"}, e{"e"};
    RDom rn, rv, rl;  // images, vectors, lanes
    Expr g_extent;
    Expr kx_extent, ky_extent;
    ScheduleParams tuned;
    Expr square_2d(int taps) const { return kx_extent == taps && ky_extent == taps; }
};

void schedule_bwd_data_cpu_flat(FlatPlaneDataStages &s, const Target &target);
void schedule_bwd_weights_cpu_flat(FlatPlaneFilterStages &s, const Target &target);

}  // namespace convgrad::gen
