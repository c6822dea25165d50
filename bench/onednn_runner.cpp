#include "onednn_runner.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <random>
#include <vector>

namespace convgrad::bench {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

dnnl::engine &engine() {
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

Result<dt> onednn_type(DType t) {
    switch (t) {
    case DType::kFloat32: return dt::f32;
    case DType::kBFloat16: return dt::bf16;
    case DType::kFloat16: return dt::f16;
    default: return Status::unsupported(std::string("oneDNN has no ") + dtype_name(t) + " convolution");
    }
}

tag activation_tag(const ConvProblem &p) {
    const bool nxc = p.activation_layout == ActivationLayout::kNXC;
    static const tag t[2][3] = {{tag::ncw, tag::nchw, tag::ncdhw}, {tag::nwc, tag::nhwc, tag::ndhwc}};
    return t[nxc][p.spatial_rank - 1];
}

tag weights_tag(const ConvProblem &p) {
    const bool xio = p.filter_layout != FilterLayout::kOIX, grouped = p.groups > 1;
    static const tag t[2][2][3] = {{{tag::oiw, tag::oihw, tag::oidhw}, {tag::goiw, tag::goihw, tag::goidhw}},
                                   {{tag::wio, tag::hwio, tag::dhwio}, {tag::wigo, tag::hwigo, tag::dhwigo}}};
    return t[xio][grouped][p.spatial_rank - 1];
}

class Impl : public OneDnnGradient {
public:
    void execute() override {
        primitive_.execute(stream_, args_);
        stream_.wait();
    }
    std::string impl() const override { return impl_; }

    dnnl::stream stream_{engine()};
    dnnl::primitive primitive_;
    std::unordered_map<int, dnnl::memory> args_;
    std::string impl_;
};

// A memory in `md` holding random values, made by reordering from a user-layout f32 buffer.
dnnl::memory random_memory(const dnnl::memory::desc &user_md, const dnnl::memory::desc &md, dnnl::stream &s) {
    dnnl::memory user(user_md, engine());
    const size_t n = user_md.get_size() / dnnl::memory::data_type_size(user_md.data_type());
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    auto *data = static_cast<unsigned char *>(user.get_data_handle());
    for (size_t i = 0; i < n; i++) {
        const float v = u(rng);
        if (user_md.data_type() == dt::f32) reinterpret_cast<float *>(data)[i] = v;
        else reinterpret_cast<uint16_t *>(data)[i] = 0x3c00;  // 1.0 in f16; a small normal bf16 otherwise
    }
    if (md == user_md) return user;
    dnnl::memory m(md, engine());
    dnnl::reorder(user, m).execute(s, user, m);
    s.wait();
    return m;
}

}  // namespace

std::string dnnl_version_string() {
    const dnnl_version_t *v = dnnl::version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

Result<std::shared_ptr<OneDnnGradient>> OneDnnGradient::create(const ConvProblem &p, Direction d, bool own_layout,
                                                               OneDnnAlgorithm algorithm) {
    auto type = onednn_type(p.dtype);
    const dnnl::algorithm alg = algorithm == OneDnnAlgorithm::kWinograd ? dnnl::algorithm::convolution_winograd
                                                                        : dnnl::algorithm::convolution_direct;
    if (algorithm == OneDnnAlgorithm::kWinograd) own_layout = true;  // its transformed layouts only
    if (!type.is_ok()) return type.status;
    try {
        dims src{p.batch, p.in_channels}, dst{p.batch, p.out_channels}, wei, strides, dilations, pad_l, pad_r;
        if (p.groups > 1) wei = {p.groups, p.out_channels / p.groups, p.in_channels / p.groups};
        else wei = {p.out_channels, p.in_channels};
        for (int a = 0; a < p.spatial_rank; a++) {
            src.push_back(p.input_size[a]), dst.push_back(p.output_size[a]), wei.push_back(p.kernel_size[a]);
            strides.push_back(p.strides[a]), dilations.push_back(p.dilations[a] - 1);
            pad_l.push_back(p.pads_begin[a]), pad_r.push_back(p.pads_end[a]);
        }
        const dnnl::memory::desc src_user(src, type.value, activation_tag(p)), dst_user(dst, type.value, activation_tag(p)),
            wei_user(wei, type.value, weights_tag(p));
        auto chosen = [&](const dnnl::memory::desc &user) {
            return own_layout ? dnnl::memory::desc(user.dims(), user.data_type(), tag::any) : user;
        };
        dnnl::convolution_forward::primitive_desc fwd(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg,
                                            chosen(src_user), chosen(wei_user), chosen(dst_user), strides, dilations,
                                            pad_l, pad_r),
            engine());
        auto r = std::make_shared<Impl>();
        if (d == Direction::kBackwardData) {
            dnnl::convolution_backward_data::primitive_desc pd(
                dnnl::convolution_backward_data::desc(alg, chosen(src_user),
                                                      chosen(wei_user), chosen(dst_user), strides, dilations, pad_l, pad_r),
                engine(), fwd);
            r->primitive_ = dnnl::convolution_backward_data(pd);
            r->impl_ = pd.impl_info_str();
            r->args_ = {{DNNL_ARG_DIFF_DST, random_memory(dst_user, pd.diff_dst_desc(), r->stream_)},
                        {DNNL_ARG_WEIGHTS, random_memory(wei_user, pd.weights_desc(), r->stream_)},
                        {DNNL_ARG_DIFF_SRC, dnnl::memory(pd.diff_src_desc(), engine())}};
        } else {
            dnnl::convolution_backward_weights::primitive_desc pd(
                dnnl::convolution_backward_weights::desc(alg, chosen(src_user),
                                                         chosen(wei_user), chosen(dst_user), strides, dilations, pad_l,
                                                         pad_r),
                engine(), fwd);
            r->primitive_ = dnnl::convolution_backward_weights(pd);
            r->impl_ = pd.impl_info_str();
            r->args_ = {{DNNL_ARG_SRC, random_memory(src_user, pd.src_desc(), r->stream_)},
                        {DNNL_ARG_DIFF_DST, random_memory(dst_user, pd.diff_dst_desc(), r->stream_)},
                        {DNNL_ARG_DIFF_WEIGHTS, dnnl::memory(pd.diff_weights_desc(), engine())}};
        }
        return std::shared_ptr<OneDnnGradient>(r);
    } catch (const dnnl::error &e) {
        return Status::unsupported(std::string("oneDNN: ") + e.what());
    }
}

}  // namespace convgrad::bench
