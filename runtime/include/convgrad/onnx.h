// ONNX frontend: ConvTranspose (onnx/defs/nn/defs.cc), which is the data gradient of a
// convolution: X plays dy, W is that convolution's weights [C_X, C_out/group, k...] (OIX), and
// the result has C_out = group * W.shape[1] channels. Layout NCX, 1-D to 3-D.
#pragma once

#include <string>
#include <vector>

#include "problem.h"

namespace convgrad::onnx {

struct ConvTransposeAttrs {
    std::string auto_pad = "NOTSET";      // NOTSET | SAME_UPPER | SAME_LOWER | VALID
    std::vector<int64_t> dilations;       // empty = all 1
    int64_t group = 1;
    std::vector<int64_t> kernel_shape;    // empty = from W; else must equal W's spatial dims
    std::vector<int64_t> output_padding;  // each < stride or < dilation
    std::vector<int64_t> output_shape;    // spatial, or full [N, C, ...]; sets the pads
    std::vector<int64_t> pads;            // [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
    std::vector<int64_t> strides;         // empty = all 1
};

// The bias input B is not part of the gradient; add it to the result if the model has one.
Result<ConvProblem> conv_transpose(const ConvTransposeAttrs &attrs, const Shape &x, const Shape &w, DType dtype);

}  // namespace convgrad::onnx
