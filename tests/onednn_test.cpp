// An independent oracle: oneDNN's convolution_backward_data / _weights on dense, grouped and
// depthwise-as-grouped problems, NHWC and NCHW, with strides, dilations and asymmetric pads.
// oneDNN reads the very tensors convgrad reads (memory descs from their strides, reordered
// into its preferred formats); each case is also checked against the float64 reference so a
// broken harness cannot pass silently.
#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "test_util.h"

namespace convgrad::test {
namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

struct OneDnnDescs {
    dnnl::memory::desc src, weights, dst;        // the user's tensors (TF layouts)
    dims strides, dilations, pad_l, pad_r;
};

OneDnnDescs describe_for_onednn(const TfConv2D &c) {
    const bool nchw = c.data_format == "NCHW";
    const int hd = nchw ? 2 : 1, wd = nchw ? 3 : 2, cd = nchw ? 1 : 3;
    const int64_t n = c.input[0], cin = c.input[cd], cout = c.out_backprop[cd];
    const int64_t kh = c.filter[0], kw = c.filter[1], cg = c.depthwise ? 1 : c.filter[2];
    const int64_t groups = cin / cg, kg = cout / groups;
    auto act = [&](const std::vector<int64_t> &s) {
        return dnnl::memory::desc({n, s[cd], s[hd], s[wd]}, dt::f32,
                                  nchw ? dnnl::memory::format_tag::nchw : dnnl::memory::format_tag::nhwc);
    };
    OneDnnDescs d;
    d.src = act(c.input);
    d.dst = act(c.out_backprop);
    // HWIO [KH, KW, Cg, C_out] (depthwise [KH, KW, C, M] is the same memory with Cg = 1):
    // output channel g*Kg + co has stride 1, input channel stride C_out.
    const int64_t s_kw = cg * cout, s_kh = kw * s_kw;
    d.weights = groups == 1 ? dnnl::memory::desc({cout, cg, kh, kw}, dt::f32, dims{1, cout, s_kh, s_kw})
                            : dnnl::memory::desc({groups, kg, cg, kh, kw}, dt::f32, dims{kg, 1, cout, s_kh, s_kw});
    for (int a = 0; a < 2; a++) {
        const int dim = (nchw ? 2 : 1) + a;
        const RefWindow w = tf_window_ref(c, a);
        const int64_t ke = (c.filter[a] - 1) * c.dilations[dim] + 1;
        d.strides.push_back(c.strides[dim]);
        d.dilations.push_back(c.dilations[dim] - 1);  // oneDNN: 0 = no dilation
        d.pad_l.push_back(w.pad_before);
        d.pad_r.push_back((w.out - 1) * c.strides[dim] + ke - c.input[dim] - w.pad_before);
    }
    return d;
}

// Runs oneDNN on user tensors `a` (filter or x) and `dy`; returns the result in TF layout.
std::vector<double> onednn_gradient(const TfConv2D &c, bool input_grad, std::vector<float> a, std::vector<float> dy) {
    using namespace dnnl;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    const OneDnnDescs d = describe_for_onednn(c);
    auto any = [](const memory::desc &m) { return memory::desc(m.dims(), dt::f32, memory::format_tag::any); };
    convolution_forward::primitive_desc fwd(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, any(d.src),
                                  any(d.weights), any(d.dst), d.strides, d.dilations, d.pad_l, d.pad_r),
        eng);
    auto to = [&](const memory &user, const memory::desc &md) {
        memory m(md, eng);
        reorder(user, m).execute(strm, const_cast<memory &>(user), m);
        return m;
    };
    std::vector<float> out(input_grad ? num_elements(c.input) : num_elements(c.filter));
    memory user_dy(d.dst, eng, dy.data());
    if (input_grad) {
        convolution_backward_data::primitive_desc pd(
            convolution_backward_data::desc(algorithm::convolution_direct, any(d.src), any(d.weights), any(d.dst),
                                            d.strides, d.dilations, d.pad_l, d.pad_r),
            eng, fwd);
        memory user_w(d.weights, eng, a.data()), user_dx(d.src, eng, out.data());
        memory p_dy = to(user_dy, pd.diff_dst_desc()), p_w = to(user_w, pd.weights_desc());
        memory p_dx(pd.diff_src_desc(), eng);
        convolution_backward_data(pd).execute(
            strm, {{DNNL_ARG_DIFF_DST, p_dy}, {DNNL_ARG_WEIGHTS, p_w}, {DNNL_ARG_DIFF_SRC, p_dx}});
        reorder(p_dx, user_dx).execute(strm, p_dx, user_dx);
    } else {
        convolution_backward_weights::primitive_desc pd(
            convolution_backward_weights::desc(algorithm::convolution_direct, any(d.src), any(d.weights),
                                               any(d.dst), d.strides, d.dilations, d.pad_l, d.pad_r),
            eng, fwd);
        memory user_x(d.src, eng, a.data()), user_dw(d.weights, eng, out.data());
        memory p_x = to(user_x, pd.src_desc()), p_dy = to(user_dy, pd.diff_dst_desc());
        memory p_dw(pd.diff_weights_desc(), eng);
        convolution_backward_weights(pd).execute(
            strm, {{DNNL_ARG_SRC, p_x}, {DNNL_ARG_DIFF_DST, p_dy}, {DNNL_ARG_DIFF_WEIGHTS, p_dw}});
        reorder(p_dw, user_dw).execute(strm, p_dw, user_dw);
    }
    strm.wait();
    return std::vector<double>(out.begin(), out.end());
}

std::vector<float> as_float(const std::vector<double> &v) { return std::vector<float>(v.begin(), v.end()); }

struct OneDnnCase {
    const char *name;
    TfConv2D conv;
};

TfConv2D make(bool nchw, bool depthwise, std::vector<int64_t> nhwc_input, std::vector<int64_t> filter,
              std::string padding, int64_t stride, int64_t dilation, std::vector<int64_t> explicit_hw = {}) {
    TfConv2D c;
    c.depthwise = depthwise;
    c.data_format = nchw ? "NCHW" : "NHWC";
    const auto &i = nhwc_input;
    c.input = nchw ? std::vector<int64_t>{i[0], i[3], i[1], i[2]} : i;
    c.filter = std::move(filter);
    c.padding = std::move(padding);
    const int hd = nchw ? 2 : 1, wd = nchw ? 3 : 2;
    c.strides = {1, 1, 1, 1};
    c.dilations = {1, 1, 1, 1};
    c.strides[hd] = c.strides[wd] = stride;
    c.dilations[hd] = c.dilations[wd] = dilation;
    if (!explicit_hw.empty()) {
        c.explicit_paddings.assign(8, 0);
        c.explicit_paddings[2 * hd] = explicit_hw[0], c.explicit_paddings[2 * hd + 1] = explicit_hw[1];
        c.explicit_paddings[2 * wd] = explicit_hw[2], c.explicit_paddings[2 * wd + 1] = explicit_hw[3];
    }
    infer_out_backprop(c);
    return c;
}

std::vector<OneDnnCase> cases() {
    std::vector<OneDnnCase> out;
    for (bool nchw : {false, true}) {
        out.push_back({"dense_3x3_same", make(nchw, false, {2, 8, 8, 16}, {3, 3, 16, 32}, "SAME", 1, 1)});
        out.push_back({"dense_3x3_s2", make(nchw, false, {2, 9, 9, 8}, {3, 3, 8, 16}, "SAME", 2, 1)});
        out.push_back({"dense_1x1_s2", make(nchw, false, {2, 8, 8, 32}, {1, 1, 32, 64}, "VALID", 2, 1)});
        out.push_back({"dense_dilated", make(nchw, false, {1, 12, 10, 6}, {3, 3, 6, 12}, "EXPLICIT", 1, 2, {2, 2, 2, 2})});
        out.push_back({"dense_5x5_s2_d2_asym", make(nchw, false, {1, 13, 12, 5}, {5, 5, 5, 7}, "EXPLICIT", 2, 2, {1, 3, 2, 0})});
        out.push_back({"grouped_g4", make(nchw, false, {2, 7, 7, 16}, {3, 3, 4, 16}, "SAME", 1, 1)});
        out.push_back({"grouped_g3_s2", make(nchw, false, {2, 11, 11, 12}, {3, 3, 4, 24}, "SAME", 2, 1)});
        out.push_back({"depthwise_m2", make(nchw, true, {2, 10, 10, 8}, {3, 3, 8, 2}, "SAME", 1, 1)});
        out.push_back({"depthwise_s2", make(nchw, true, {2, 9, 9, 6}, {3, 3, 6, 1}, "SAME", 2, 1)});
    }
    return out;
}

TEST(OneDnn, MatchesOnDenseGroupedAndDepthwise) {
    Rng rng(11);
    for (const OneDnnCase &k : cases()) {
        const TfConv2D &c = k.conv;
        SCOPED_TRACE(std::string(k.name) + " " + describe(c));
        const auto x = random_values(num_elements(c.input), rng);
        const auto w = random_values(num_elements(c.filter), rng);
        const auto dy = random_values(num_elements(c.out_backprop), rng);
        for (bool input_grad : {true, false}) {
            const auto &a = input_grad ? w : x;
            const auto onednn = onednn_gradient(c, input_grad, as_float(a), as_float(dy));
            const auto ref = input_grad ? backprop_input(c, w, dy) : backprop_filter(c, x, dy);
            ASSERT_LE(relative_error(onednn, ref), 1e-5) << "the oneDNN harness disagrees with the reference";
            const TfRunResult r = run_tf(c, input_grad, a, dy, false);
            ASSERT_TRUE(r.status.is_ok()) << r.status.message();
            EXPECT_LE(relative_error(r.result, onednn), 1e-5) << (input_grad ? "data gradient" : "filter gradient");
        }
    }
}

}  // namespace
}  // namespace convgrad::test
