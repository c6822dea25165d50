// The canonical problem descriptor. Every frontend (TensorFlow, oneDNN Graph, ONNX attributes)
// resolves its attributes into this one struct, through one validation and shape-inference
// module; kernels never see frontend attributes.
#pragma once

#include <array>
#include <cstdint>

#include "status.h"
#include "tensor.h"

namespace convgrad {

// Activation layouts: N, spatial..., C (NHWC, NDHWC, NWC) or N, C, spatial... (NCHW, ...).
enum class ActivationLayout { kNXC, kNCX };

// Filter layouts (shapes, with X the spatial dims):
//   XIO [X..., IC/G, OC]  (TF HWIO; grouped output channels o = g*OC/G + co)
//   OIX [OC, IC/G, X...]  (oneDNN OIX, PyTorch/ONNX forward weights)
//   XGM [X..., G, OC/G]   (TF depthwise [KH, KW, C, M]; requires IC/G == 1)
enum class FilterLayout { kXIO, kOIX, kXGM };

using SpatialDims = std::array<int64_t, 3>;  // first `spatial_rank` entries used, outermost first (D, H, W)

struct ConvProblem {
    int spatial_rank = 2;                    // 1, 2 or 3
    int64_t batch = 1;                       // N
    int64_t groups = 1;                      // G
    int64_t in_channels = 1;                 // C_in, total over groups
    int64_t out_channels = 1;                // C_out, total over groups
    SpatialDims input_size{1, 1, 1};         // of the forward input x (= shape of dx)
    SpatialDims output_size{1, 1, 1};        // of the forward output y (= shape of dy)
    SpatialDims kernel_size{1, 1, 1};
    SpatialDims strides{1, 1, 1};
    SpatialDims dilations{1, 1, 1};          // 1 = none
    SpatialDims pads_begin{0, 0, 0};
    SpatialDims pads_end{0, 0, 0};           // may be negative: trailing rows that get zero gradient
    ActivationLayout activation_layout = ActivationLayout::kNXC;
    FilterLayout filter_layout = FilterLayout::kXIO;
    DType dtype = DType::kFloat32;
};

// Checks internal consistency (sizes, groups, output size implied by input, kernel, stride,
// dilation and pads). Frontends call it last; the execute functions call it again.
Status validate(const ConvProblem &p);

// Shapes of the three tensors, in the problem's layouts.
Shape input_shape(const ConvProblem &p);    // x and dx
Shape output_shape(const ConvProblem &p);   // dy
Shape filter_shape(const ConvProblem &p);   // w and dw

// Multiply-adds of one gradient (the same count for both directions).
double multiply_adds(const ConvProblem &p);

}  // namespace convgrad
