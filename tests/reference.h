// A plain float64 reference for TensorFlow's 2-D convolution gradients, written from TF's
// definitions and independent of convgrad's runtime: it resolves padding with its own copy of
// TF's formulas, indexes NHWC/NCHW/HWIO/depthwise tensors directly, and scatters over the
// forward convolution (o, k) pairs instead of gathering as the kernels do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convgrad::test {

struct TfConv2D {
    bool depthwise = false;
    std::string padding = "VALID";        // SAME, VALID, EXPLICIT
    std::string data_format = "NHWC";     // NHWC, NCHW
    std::vector<int64_t> strides{1, 1, 1, 1}, dilations{1, 1, 1, 1}, explicit_paddings;
    std::vector<int64_t> input;           // x shape, data_format order
    std::vector<int64_t> filter;          // [KH, KW, C_in/G, C_out] or depthwise [KH, KW, C, M]
    std::vector<int64_t> out_backprop;    // dy shape, data_format order
};

// Output spatial size and pad-before, as TF computes them (-1 if TF would reject).
struct RefWindow {
    int64_t out, pad_before;
};
RefWindow tf_window_ref(const TfConv2D &c, int spatial_axis /*0 = H, 1 = W*/);

// Fills c.out_backprop from c.input, c.filter and the attributes. False if TF would reject.
bool infer_out_backprop(TfConv2D &c);

std::vector<double> backprop_input(const TfConv2D &c, const std::vector<double> &filter,
                                   const std::vector<double> &dy);
std::vector<double> backprop_filter(const TfConv2D &c, const std::vector<double> &x,
                                    const std::vector<double> &dy);

}  // namespace convgrad::test
