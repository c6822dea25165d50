// oneDNN Graph frontend: ConvolutionBackpropData-1 and ConvolutionBackpropFilters-1, 1-D to
// 3-D, with oneDNN Graph's attribute semantics (dilation 1 = none). Beyond oneDNN: auto_pad
// with dilation > 1, groups in any layout, float64 and other dtypes as they are built.
#pragma once

#include <string>
#include <vector>

#include "problem.h"

namespace convgrad::onednn {

struct ConvAttrs {
    std::vector<int64_t> strides;         // one per spatial axis; empty = all 1
    std::vector<int64_t> pads_begin;      // empty = all 0 (ignored when auto_pad is set)
    std::vector<int64_t> pads_end;
    std::vector<int64_t> dilations;       // empty = all 1
    std::string auto_pad = "none";        // none | same_upper | same_lower | valid, any case
    int64_t groups = 1;
    std::string data_format = "NXC";      // NXC | NCX
    std::string filter_format = "XIO";    // XIO [X..., IC/G, OC] | OIX [OC, IC/G, X...]
    std::vector<int64_t> output_padding;  // data op only: extra trailing rows of the result
};

// output_shape: empty (inferred), the spatial sizes, or the full shape in data_format order.
Result<ConvProblem> convolution_backprop_data(const ConvAttrs &attrs, const Shape &output_delta,
                                              const Shape &filter, const Shape &output_shape, DType dtype);

// filters_shape: the spatial sizes (as the -1 spec says) or the full shape in filter_format
// order (as oneDNN's implementation takes it).
Result<ConvProblem> convolution_backprop_filters(const ConvAttrs &attrs, const Shape &input,
                                                 const Shape &output_delta, const Shape &filters_shape,
                                                 DType dtype);

}  // namespace convgrad::onednn
