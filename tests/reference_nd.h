// A plain float64 reference for N-D (1-D to 3-D) grouped convolution gradients, in one fixed
// layout: activations [N, C, X...] (NCX) and filters [G*Kg, Cg, K...] (OIX, which is also
// group-major GOIX). Pads are given explicitly; frontend tests derive them with their own copy
// of each framework's rule, and convert tensors with permute().
#pragma once

#include <cstdint>
#include <vector>

namespace convgrad::test {

struct NdConv {
    int rank = 2;
    int64_t batch = 1, groups = 1, cin = 1, cout = 1;  // channel totals
    std::vector<int64_t> in, out, kernel, stride, dilation, pad_begin;  // per spatial axis

    std::vector<int64_t> x_shape() const;   // [N, Cin, in...]
    std::vector<int64_t> dy_shape() const;  // [N, Cout, out...]
    std::vector<int64_t> w_shape() const;   // [Cout, Cin/G, kernel...]
};

std::vector<double> nd_backprop_data(const NdConv &c, const std::vector<double> &w, const std::vector<double> &dy);
std::vector<double> nd_backprop_filter(const NdConv &c, const std::vector<double> &x, const std::vector<double> &dy);

// out[i'] = in[i] where out's dim j is in's dim perm[j]; returns out's values (C order).
std::vector<double> permute(const std::vector<double> &values, const std::vector<int64_t> &shape,
                            const std::vector<int> &perm);
std::vector<int64_t> permute_shape(const std::vector<int64_t> &shape, const std::vector<int> &perm);
std::vector<int> inverse(const std::vector<int> &perm);

// Common permutations for spatial rank r.
std::vector<int> ncx_to_nxc(int r);  // [N, C, X...] -> [N, X..., C]
std::vector<int> oix_to_xio(int r);  // [O, I, K...] -> [K..., I, O]

// A problem's tensors between the references' logical order (NCX activations, OIX filters)
// and the layouts a run takes them in: NXC activations where `nxc`, XIO filters where `xio`.
struct Layouts {
    const NdConv &c;
    bool nxc, xio;
    std::vector<double> to_act(const std::vector<double> &v, const std::vector<int64_t> &ncx_shape) const;
    std::vector<double> from_act(const std::vector<double> &v, const std::vector<int64_t> &ncx_shape) const;
    std::vector<double> to_filter(const std::vector<double> &v) const;
    std::vector<double> from_filter(const std::vector<double> &v) const;
};

}  // namespace convgrad::test
