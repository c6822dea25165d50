// The canonical logical form every convgrad kernel is written over.
//
// Whatever the frontend (TF, oneDNN Graph, ONNX) and whatever the memory layout (NHWC, NCHW,
// HWIO, OIHW, depthwise [KH,KW,C,M]), a kernel sees 6-D buffers in this dimension order
// (innermost first, as Halide numbers dimensions). Layouts are only different strides over
// these dimensions, so no layout ever needs a transposing copy, and groups are a dimension,
// so dense (G = 1), grouped and depthwise (C/G = 1) convolutions are the same algorithm.
// 1-D and 2-D problems are 3-D problems whose missing spatial dims have extent 1.
//
// This header is plain C++ so the runtime shares the numbering with the generators.
#pragma once

namespace convgrad::canonical {

// Activations: the convolution input x / its gradient dx, and the output gradient dy.
//   c: channel inside group g (channel = g * C_per_group + c); x, y, z: W, H, D; n: batch.
enum ActDim { kC = 0, kX = 1, kY = 2, kZ = 3, kG = 4, kN = 5, kActDims = 6 };

// The stride-2 data-gradient variants (x_phases = 2) write dx through a 7-D view that splits
// x = 2q + p: (c, q, p, y, z, g, n), q with twice x's stride. Tiles over q of one phase p
// then take the same taps at every pixel.
// q and p are dims 1 and 2; y, z, g, n follow.
constexpr int kPhaseActDims = 7;

// Filters w / dw: ci input channel in group, co output channel in group, taps kx ky kz, group g.
enum FilterDim { kCi = 0, kCo = 1, kKx = 2, kKy = 3, kKz = 4, kFg = 5, kFilterDims = 6 };

constexpr int kMaxSpatial = 3;

// Canonical spatial index (0 = x, 1 = y, 2 = z) of a problem's spatial axis `a`, axes listed
// outermost first (D, H, W) as in shapes: the innermost axis is x. Add kX or kKx for the
// activation or filter dimension.
constexpr int spatial_index(int spatial_rank, int a) { return spatial_rank - 1 - a; }

}  // namespace convgrad::canonical
