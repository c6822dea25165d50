#include "reference.h"

#include <algorithm>

namespace convgrad::test {
namespace {

// Visits every term of the forward convolution that touches a real input element:
// term(x_index, w_index, dy_index). Both gradients are sums of the same terms.
template<typename Term>
void for_each_term(const TfConv2D &c, Term term) {
    const bool nchw = c.data_format == "NCHW";
    const int hd = nchw ? 2 : 1, wd = nchw ? 3 : 2, cd = nchw ? 1 : 3;
    const int64_t n_batch = c.input[0], cin = c.input[cd], ih = c.input[hd], iw = c.input[wd];
    const int64_t oh = c.out_backprop[hd], ow = c.out_backprop[wd], cout = c.out_backprop[cd];
    const int64_t kh = c.filter[0], kw = c.filter[1], f2 = c.filter[2], f3 = c.filter[3];
    const RefWindow h = tf_window_ref(c, 0), w = tf_window_ref(c, 1);
    auto act = [&](int64_t n, int64_t y, int64_t x, int64_t ch, int64_t H, int64_t W, int64_t C) {
        return nchw ? ((n * C + ch) * H + y) * W + x : ((n * H + y) * W + x) * C + ch;
    };
    // (input channel, filter [ci][co] index pair, output channel) triples.
    struct Pair { int64_t in_ch, f_in, f_out, out_ch; };
    std::vector<Pair> pairs;
    if (c.depthwise) {
        for (int64_t ch = 0; ch < cin; ch++)
            for (int64_t m = 0; m < f3; m++) pairs.push_back({ch, ch, m, ch * f3 + m});
    } else {
        const int64_t groups = cin / f2, out_per_group = cout / groups;
        for (int64_t co = 0; co < cout; co++)
            for (int64_t ci = 0; ci < f2; ci++) pairs.push_back({(co / out_per_group) * f2 + ci, ci, co, co});
    }
    for (int64_t n = 0; n < n_batch; n++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t ky = 0; ky < kh; ky++)
                    for (int64_t kx = 0; kx < kw; kx++) {
                        const int64_t y = oy * c.strides[hd] - h.pad_before + ky * c.dilations[hd];
                        const int64_t x = ox * c.strides[wd] - w.pad_before + kx * c.dilations[wd];
                        if (y < 0 || y >= ih || x < 0 || x >= iw) continue;
                        for (const Pair &p : pairs) {
                            term(act(n, y, x, p.in_ch, ih, iw, cin), ((ky * kw + kx) * f2 + p.f_in) * f3 + p.f_out,
                                 act(n, oy, ox, p.out_ch, oh, ow, cout));
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
    for_each_term(c, [&](int64_t xi, int64_t wi, int64_t yi) { dx[xi] += dy[yi] * filter[wi]; });
    return dx;
}

std::vector<double> backprop_filter(const TfConv2D &c, const std::vector<double> &x,
                                    const std::vector<double> &dy) {
    std::vector<double> dw(product(c.filter), 0.0);
    for_each_term(c, [&](int64_t xi, int64_t wi, int64_t yi) { dw[wi] += x[xi] * dy[yi]; });
    return dw;
}

}  // namespace convgrad::test
