#include "reference_nd.h"

#include <algorithm>
#include <cstddef>

namespace convgrad::test {
namespace {

int64_t product(const std::vector<int64_t> &s) {
    int64_t p = 1;
    for (int64_t d : s) p *= d;
    return p;
}

// Flat index of `idx` in a C-ordered tensor of `shape`.
int64_t flat(const std::vector<int64_t> &shape, const std::vector<int64_t> &idx) {
    int64_t f = 0;
    for (std::size_t d = 0; d < shape.size(); d++) f = f * shape[d] + idx[d];
    return f;
}

// Advances a multi-index over `extent` in C order; false when it wraps around.
bool next(std::vector<int64_t> &idx, const std::vector<int64_t> &extent) {
    for (std::size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < extent[d]) return true;
        idx[d] = 0;
    }
    return false;
}

// Visits every forward term (x index, w index, dy index) touching a real input element.
template<typename Term>
void for_each_term(const NdConv &c, Term term) {
    const int64_t cg = c.cin / c.groups, kg = c.cout / c.groups;
    const auto xs = c.x_shape(), ys = c.dy_shape(), ws = c.w_shape();
    if (product(ys) == 0 || product(xs) == 0) return;
    const int64_t x_plane = product(c.in), w_plane = product(c.kernel), y_plane = product(c.out);
    std::vector<int64_t> o(c.rank, 0), k(c.rank, 0), i(c.rank, 0);
    for (int64_t n = 0; n < c.batch; n++)
        for (int64_t oc = 0; oc < c.cout; oc++) {
            const int64_t g = oc / kg;
            std::fill(o.begin(), o.end(), 0);
            do {
                std::fill(k.begin(), k.end(), 0);
                do {
                    bool inside = true;
                    for (int a = 0; a < c.rank; a++) {
                        i[a] = o[a] * c.stride[a] - c.pad_begin[a] + k[a] * c.dilation[a];
                        inside = inside && i[a] >= 0 && i[a] < c.in[a];
                    }
                    if (!inside) continue;
                    // [N, C, spatial...] in C order: (n * C + channel) * plane + position. (A
                    // vector per index per term made the reference most of a 3-D test's time.)
                    const int64_t x_pos = flat(c.in, i), w_pos = flat(c.kernel, k), y_pos = flat(c.out, o);
                    for (int64_t ci = 0; ci < cg; ci++) {
                        term((n * c.cin + g * cg + ci) * x_plane + x_pos, (oc * cg + ci) * w_plane + w_pos,
                             (n * c.cout + oc) * y_plane + y_pos);
                    }
                } while (next(k, c.kernel));
            } while (next(o, c.out));
        }
}

}  // namespace

std::vector<int64_t> NdConv::x_shape() const {
    std::vector<int64_t> s{batch, cin};
    s.insert(s.end(), in.begin(), in.end());
    return s;
}
std::vector<int64_t> NdConv::dy_shape() const {
    std::vector<int64_t> s{batch, cout};
    s.insert(s.end(), out.begin(), out.end());
    return s;
}
std::vector<int64_t> NdConv::w_shape() const {
    std::vector<int64_t> s{cout, cin / groups};
    s.insert(s.end(), kernel.begin(), kernel.end());
    return s;
}

std::vector<double> nd_backprop_data(const NdConv &c, const std::vector<double> &w, const std::vector<double> &dy) {
    std::vector<double> dx(product(c.x_shape()), 0.0);
    for_each_term(c, [&](int64_t xi, int64_t wi, int64_t yi) { dx[xi] += dy[yi] * w[wi]; });
    return dx;
}

std::vector<double> nd_backprop_filter(const NdConv &c, const std::vector<double> &x, const std::vector<double> &dy) {
    std::vector<double> dw(product(c.w_shape()), 0.0);
    for_each_term(c, [&](int64_t xi, int64_t wi, int64_t yi) { dw[wi] += x[xi] * dy[yi]; });
    return dw;
}

std::vector<int64_t> permute_shape(const std::vector<int64_t> &shape, const std::vector<int> &perm) {
    std::vector<int64_t> out(perm.size());
    for (std::size_t j = 0; j < perm.size(); j++) out[j] = shape[perm[j]];
    return out;
}

std::vector<double> permute(const std::vector<double> &values, const std::vector<int64_t> &shape,
                            const std::vector<int> &perm) {
    const auto out_shape = permute_shape(shape, perm);
    std::vector<double> out(values.size());
    if (values.empty()) return out;
    std::vector<int64_t> idx(shape.size(), 0), out_idx(shape.size());
    do {
        for (std::size_t j = 0; j < perm.size(); j++) out_idx[j] = idx[perm[j]];
        out[flat(out_shape, out_idx)] = values[flat(shape, idx)];
    } while (next(idx, shape));
    return out;
}

std::vector<int> inverse(const std::vector<int> &perm) {
    std::vector<int> inv(perm.size());
    for (std::size_t j = 0; j < perm.size(); j++) inv[perm[j]] = static_cast<int>(j);
    return inv;
}

std::vector<int> ncx_to_nxc(int r) {
    std::vector<int> p{0};
    for (int a = 0; a < r; a++) p.push_back(2 + a);
    p.push_back(1);
    return p;
}

std::vector<int> oix_to_xio(int r) {
    std::vector<int> p;
    for (int a = 0; a < r; a++) p.push_back(2 + a);
    p.push_back(1);
    p.push_back(0);
    return p;
}

std::vector<double> Layouts::to_act(const std::vector<double> &v, const std::vector<int64_t> &ncx_shape) const {
    return nxc ? permute(v, ncx_shape, ncx_to_nxc(c.rank)) : v;
}

std::vector<double> Layouts::from_act(const std::vector<double> &v, const std::vector<int64_t> &ncx_shape) const {
    return nxc ? permute(v, permute_shape(ncx_shape, ncx_to_nxc(c.rank)), inverse(ncx_to_nxc(c.rank))) : v;
}

std::vector<double> Layouts::to_filter(const std::vector<double> &v) const {
    return xio ? permute(v, c.w_shape(), oix_to_xio(c.rank)) : v;
}

std::vector<double> Layouts::from_filter(const std::vector<double> &v) const {
    return xio ? permute(v, permute_shape(c.w_shape(), oix_to_xio(c.rank)), inverse(oix_to_xio(c.rank))) : v;
}

}  // namespace convgrad::test
