#include "reference.h"

#include <algorithm>

namespace convgrad::test {
namespace {

// Visits every term of the forward convolution that touches a real input element, in runs:
// run(x, x_step, w, y, y_step, count) stands for the terms (x + j * x_step, w + j,
// y + j * y_step), j < count, of x index, filter index and dy index. Both gradients are sums
// of the same terms. (A call per term, indexing each anew, made the reference most of a large
// layer's test time, and most of the ARM64 tests' time under qemu.)
template<typename Run>
void for_each_run(const TfConv2D &c, Run run) {
    const bool nchw = c.data_format == "NCHW";
    const int hd = nchw ? 2 : 1, wd = nchw ? 3 : 2, cd = nchw ? 1 : 3;
    const int64_t n_batch = c.input[0], cin = c.input[cd], ih = c.input[hd], iw = c.input[wd];
    const int64_t oh = c.out_backprop[hd], ow = c.out_backprop[wd], cout = c.out_backprop[cd];
    const int64_t kh = c.filter[0], kw = c.filter[1], f2 = c.filter[2], f3 = c.filter[3];
    const RefWindow h = tf_window_ref(c, 0), w = tf_window_ref(c, 1);
    // An activation element's index is n * image + y * row + x * pixel + channel * channel_step.
    struct Steps { int64_t image, row, pixel, channel; };
    auto steps = [&](int64_t H, int64_t W, int64_t C) {
        return nchw ? Steps{C * H * W, W, 1, H * W} : Steps{H * W * C, W * C, C, 1};
    };
    const Steps xs = steps(ih, iw, cin), ys = steps(oh, ow, cout);
    // Each input channel meets a run of consecutive output channels, whose filter elements at
    // one tap are consecutive too: depthwise [KH, KW, C, M], channel ch meets ch * M + m; else
    // [KH, KW, C_in/G, C_out], channel ci of group g meets the group's C_out/G.
    const int64_t groups = c.depthwise ? cin : cin / f2;
    const int64_t run_length = c.depthwise ? f3 : cout / groups;
    for (int64_t n = 0; n < n_batch; n++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t ky = 0; ky < kh; ky++)
                    for (int64_t kx = 0; kx < kw; kx++) {
                        const int64_t y = oy * c.strides[hd] - h.pad_before + ky * c.dilations[hd];
                        const int64_t x = ox * c.strides[wd] - w.pad_before + kx * c.dilations[wd];
                        if (y < 0 || y >= ih || x < 0 || x >= iw) continue;
                        const int64_t x_at = n * xs.image + y * xs.row + x * xs.pixel;
                        const int64_t w_at = (ky * kw + kx) * f2 * f3;
                        const int64_t y_at = n * ys.image + oy * ys.row + ox * ys.pixel;
                        if (groups == cin && run_length == 1) {  // channel k meets channel k alone: one run
                            run(x_at, xs.channel, w_at, y_at, ys.channel, cin);
                            continue;
                        }
                        for (int64_t in_ch = 0; in_ch < cin; in_ch++) {
                            const int64_t first_out = (in_ch / (cin / groups)) * run_length;
                            const int64_t filter_row = c.depthwise ? in_ch : in_ch % f2;
                            run(x_at + in_ch * xs.channel, 0, w_at + filter_row * f3 + (c.depthwise ? 0 : first_out),
                                y_at + first_out * ys.channel, ys.channel, run_length);
                        }
                    }
}

int64_t product(const std::vector<int64_t> &s) {
    int64_t p = 1;
    for (int64_t d : s) p *= d;
    return p;
}

}  // namespace

RefWindow tf_window_ref(const TfConv2D &c, int axis) {
    const bool nchw = c.data_format == "NCHW";
    const int dim = (nchw ? 2 : 1) + axis;
    const int64_t in = c.input[dim], k = c.filter[axis], s = c.strides[dim], d = c.dilations[dim];
    const int64_t ke = (k - 1) * d + 1;
    if (c.padding == "VALID") {
        const int64_t out = (in - ke + s) / s;
        return {out < 0 ? -1 : out, 0};
    }
    if (c.padding == "SAME") {
        const int64_t out = (in + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + ke - in);
        return {out, total / 2};
    }
    const int64_t before = c.explicit_paddings[2 * dim], after = c.explicit_paddings[2 * dim + 1];
    const int64_t out = (in + before + after - ke + s) / s;
    return {out < 0 ? -1 : out, before};
}

bool infer_out_backprop(TfConv2D &c) {
    const bool nchw = c.data_format == "NCHW";
    const RefWindow h = tf_window_ref(c, 0), w = tf_window_ref(c, 1);
    if (h.out < 0 || w.out < 0) return false;
    const int64_t cout = c.depthwise ? c.filter[2] * c.filter[3] : c.filter[3];
    c.out_backprop = nchw ? std::vector<int64_t>{c.input[0], cout, h.out, w.out}
                          : std::vector<int64_t>{c.input[0], h.out, w.out, cout};
    return true;
}

std::vector<double> backprop_input(const TfConv2D &c, const std::vector<double> &filter,
                                   const std::vector<double> &dy) {
    std::vector<double> dx(product(c.input), 0.0);
    for_each_run(c, [&](int64_t xi, int64_t x_step, int64_t wi, int64_t yi, int64_t y_step, int64_t count) {
        if (x_step != 0) {
            for (int64_t j = 0; j < count; j++) dx[xi + j * x_step] += dy[yi + j * y_step] * filter[wi + j];
            return;
        }
        double sum = 0;  // the run's terms all add to one x element
        for (int64_t j = 0; j < count; j++) sum += dy[yi + j * y_step] * filter[wi + j];
        dx[xi] += sum;
    });
    return dx;
}

std::vector<double> backprop_filter(const TfConv2D &c, const std::vector<double> &x,
                                    const std::vector<double> &dy) {
    std::vector<double> dw(product(c.filter), 0.0);
    for_each_run(c, [&](int64_t xi, int64_t x_step, int64_t wi, int64_t yi, int64_t y_step, int64_t count) {
        for (int64_t j = 0; j < count; j++) dw[wi + j] += x[xi + j * x_step] * dy[yi + j * y_step];
    });
    return dw;
}

}  // namespace convgrad::test
