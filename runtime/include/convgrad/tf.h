// TensorFlow frontend: TF's attributes and shapes → ConvProblem, with TF's exact semantics
// (tensorflow/core/kernels/conv_grad_shape_utils.cc, framework/kernel_shape_util.cc).
//
// Shapes are given in data_format order. Every error names the offending argument with TF's
// spelling ("strides: ...", "out_backprop: ...").
#pragma once

#include <string>
#include <vector>

#include "problem.h"

namespace convgrad::tf {

struct ConvAttrs {
    std::vector<int64_t> strides;            // empty = all 1; else one entry per dim (4 or 5)
    std::vector<int64_t> dilations;          // empty = all 1
    std::string padding;                     // "SAME", "VALID" or "EXPLICIT" (required, as in TF)
    std::vector<int64_t> explicit_paddings;  // 2 per dim, data_format order, when EXPLICIT
    std::string data_format;                 // empty = "NHWC" / "NDHWC"
};

// Conv2DBackpropInput / Conv3DBackpropInputV2: input_sizes has all dims, or (2-D) just [H, W].
Result<ConvProblem> conv2d_backprop_input(const ConvAttrs &attrs, const Shape &input_sizes,
                                          const Shape &filter, const Shape &out_backprop, DType dtype);
Result<ConvProblem> conv2d_backprop_filter(const ConvAttrs &attrs, const Shape &input,
                                           const Shape &filter_sizes, const Shape &out_backprop,
                                           DType dtype);

// DepthwiseConv2dNative*: filter [KH, KW, C, M], output channel c*M + m.
Result<ConvProblem> depthwise_conv2d_backprop_input(const ConvAttrs &attrs, const Shape &input_sizes,
                                                    const Shape &filter, const Shape &out_backprop,
                                                    DType dtype);
Result<ConvProblem> depthwise_conv2d_backprop_filter(const ConvAttrs &attrs, const Shape &input,
                                                     const Shape &filter_sizes,
                                                     const Shape &out_backprop, DType dtype);

// Conv3DBackpropInputV2 / Conv3DBackpropFilterV2: 5-D shapes (NDHWC / NCDHW), filter DHWIO,
// 5-entry strides/dilations, padding SAME or VALID.
Result<ConvProblem> conv3d_backprop_input_v2(const ConvAttrs &attrs, const Shape &input_sizes, const Shape &filter,
                                             const Shape &out_backprop, DType dtype);
Result<ConvProblem> conv3d_backprop_filter_v2(const ConvAttrs &attrs, const Shape &input, const Shape &filter_sizes,
                                              const Shape &out_backprop, DType dtype);

}  // namespace convgrad::tf
