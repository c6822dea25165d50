// The C API (include/convgrad.h) over DLPack tensors: on random problems of every rank, layout
// and grouping it gives bit-identical results to the C++ API (so every attribute reaches the
// kernels), honours byte_offset and strides, and turns every kind of bad input into a status
// with a message naming the argument, leaving the result untouched.
#include "convgrad.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "reference_nd.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

int64_t pick(Rng &rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

// A random valid problem, its C descriptor built independently from the same numbers.
struct Case {
    ConvProblem p;
    convgrad_conv_desc d;
};

Case random_case(Rng &rng) {
    while (true) {
        Case c;
        ConvProblem &p = c.p;
        p.spatial_rank = static_cast<int>(pick(rng, 1, 3));
        p.batch = pick(rng, 1, 2);
        const bool depthwise = pick(rng, 0, 3) == 0;
        p.groups = depthwise ? pick(rng, 2, 5) : pick(rng, 1, 2);
        p.in_channels = depthwise ? p.groups : p.groups * pick(rng, 1, 4);
        p.out_channels = p.groups * pick(rng, 1, 4);
        p.activation_layout = pick(rng, 0, 1) ? ActivationLayout::kNXC : ActivationLayout::kNCX;
        p.filter_layout = depthwise && pick(rng, 0, 1) ? FilterLayout::kXGM
                          : pick(rng, 0, 1)            ? FilterLayout::kXIO
                                                       : FilterLayout::kOIX;
        c.d = convgrad_conv_desc_default(p.spatial_rank);
        c.d.groups = p.groups;
        c.d.activation_layout = p.activation_layout == ActivationLayout::kNXC ? CONVGRAD_NXC : CONVGRAD_NCX;
        c.d.filter_layout = p.filter_layout == FilterLayout::kXIO   ? CONVGRAD_XIO
                            : p.filter_layout == FilterLayout::kOIX ? CONVGRAD_OIX
                                                                    : CONVGRAD_XGM;
        bool ok = true;
        for (int a = 0; a < p.spatial_rank; a++) {
            const int64_t in = pick(rng, 1, p.spatial_rank == 3 ? 6 : 11), k = pick(rng, 1, 3);
            const int64_t s = pick(rng, 1, 3), dil = pick(rng, 1, 2), pb = pick(rng, 0, 2), pe = pick(rng, -1, 2);
            const int64_t span = in + pb + pe - ((k - 1) * dil + 1);
            p.input_size[a] = in, p.kernel_size[a] = k, p.strides[a] = s, p.dilations[a] = dil;
            p.pads_begin[a] = pb, p.pads_end[a] = pe;
            p.output_size[a] = span < 0 ? 0 : span / s + 1;
            ok = ok && span >= 0 && span % s == 0;  // pads_end exactly consistent
            c.d.strides[a] = s, c.d.dilations[a] = dil, c.d.pads_begin[a] = pb, c.d.pads_end[a] = pe;
        }
        if (ok && validate(p).is_ok()) return c;
    }
}

DLTensor dl_view(const HostTensor &h) {
    DLTensor t{};
    t.data = h.tensor.data;
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int32_t>(h.tensor.shape.size());
    t.dtype = {kDLFloat, 32, 1};
    t.shape = const_cast<int64_t *>(h.tensor.shape.data());
    t.strides = h.tensor.strides.empty() ? nullptr : const_cast<int64_t *>(h.tensor.strides.data());
    return t;
}

TEST(CApi, MatchesCppApiBitForBit) {
    Rng rng(9009);
    for (int i = 0; i < 120; i++) {
        const Case c = random_case(rng);
        const ConvProblem &p = c.p;
        SCOPED_TRACE("case " + std::to_string(i) + ": rank " + std::to_string(p.spatial_rank) + " groups " +
                     std::to_string(p.groups) + " in " + shape_string(input_shape(p)) + " w " +
                     shape_string(filter_shape(p)));
        for (bool data : {true, false}) {
            const bool gapped = i % 2 == 1;
            const OperandShapes shapes = operand_shapes(data ? Direction::kBackwardData : Direction::kBackwardWeights, p);
            HostTensor a(shapes.a, gapped), b(shapes.b, gapped);
            a.fill(random_values(a.tensor.num_elements(), rng));
            b.fill(random_values(b.tensor.num_elements(), rng));
            HostTensor via_cpp(shapes.result, gapped), via_c(shapes.result, gapped);
            via_cpp.poison();
            via_c.poison();
            const Status s = data ? backward_data(p, a.tensor, b.tensor, via_cpp.tensor)
                                  : backward_weights(p, a.tensor, b.tensor, via_cpp.tensor);
            ASSERT_TRUE(s.is_ok()) << s.message();
            const DLTensor da = dl_view(a), db = dl_view(b), dr = dl_view(via_c);
            const convgrad_status cs = data ? convgrad_backward_data(&c.d, &da, &db, &dr)
                                            : convgrad_backward_weights(&c.d, &da, &db, &dr);
            ASSERT_EQ(cs, CONVGRAD_OK) << convgrad_last_error();
            EXPECT_STREQ(convgrad_last_error(), "");
            const std::vector<double> want = via_cpp.values(), got = via_c.values();
            ASSERT_EQ(want.size(), got.size());
            for (size_t e = 0; e < want.size(); e++) {
                ASSERT_TRUE(std::isfinite(got[e]) && got[e] == want[e]) << (data ? "data" : "filter") << " element " << e;
            }
        }
    }
}

// The values themselves, against the plain float64 reference: 1-D NCX, stride 2, dilation 2.
TEST(CApi, MatchesReference) {
    NdConv n;
    n.rank = 1, n.batch = 2, n.groups = 1, n.cin = 3, n.cout = 4;
    n.in = {9}, n.kernel = {3}, n.stride = {2}, n.dilation = {2}, n.pad_begin = {1};
    n.out = {(9 + 1 + 1 - 5) / 2 + 1};  // pads_end 1
    Rng rng(5);
    const auto w = random_values(4 * 3 * 3, rng), dy = random_values(2 * 4 * n.out[0], rng);
    const auto ref = nd_backprop_data(n, w, dy);
    HostTensor tw({4, 3, 3}, false), tdy({2, 4, n.out[0]}, false), tdx({2, 3, 9}, false);
    tw.fill(w), tdy.fill(dy), tdx.poison();
    convgrad_conv_desc d = convgrad_conv_desc_default(1);
    d.strides[0] = 2, d.dilations[0] = 2, d.pads_begin[0] = 1, d.pads_end[0] = 1;
    d.activation_layout = CONVGRAD_NCX, d.filter_layout = CONVGRAD_OIX;
    const DLTensor a = dl_view(tdy), b = dl_view(tw), r = dl_view(tdx);
    ASSERT_EQ(convgrad_backward_data(&d, &a, &b, &r), CONVGRAD_OK) << convgrad_last_error();
    EXPECT_LE(relative_error(tdx.values(), ref), 1e-6);
}

// byte_offset: the tensor starts inside a larger allocation.
TEST(CApi, HonoursByteOffset) {
    std::vector<float> x(1 + 5, 0.f), dy(1 + 3), dw(1 + 3, NAN);
    for (int i = 0; i < 5; i++) x[1 + i] = static_cast<float>(i + 1);  // x = 1..5
    for (int i = 0; i < 3; i++) dy[1 + i] = 1.f;
    int64_t xs[3] = {1, 5, 1}, ys[3] = {1, 3, 1}, ws[3] = {3, 1, 1};
    const DLDataType f32 = {kDLFloat, 32, 1};
    DLTensor tx{x.data(), {kDLCPU, 0}, 3, f32, xs, nullptr, sizeof(float)};
    DLTensor ty{dy.data(), {kDLCPU, 0}, 3, f32, ys, nullptr, sizeof(float)};
    DLTensor tw{dw.data(), {kDLCPU, 0}, 3, f32, ws, nullptr, sizeof(float)};
    const convgrad_conv_desc d = convgrad_conv_desc_default(1);  // NWC, WIO: x [1,5,1], w [3,1,1]
    ASSERT_EQ(convgrad_backward_weights(&d, &tx, &ty, &tw), CONVGRAD_OK) << convgrad_last_error();
    EXPECT_TRUE(std::isnan(dw[0]));  // before the offset: untouched
    EXPECT_EQ(dw[1], 1 + 2 + 3);     // tap k sums x[k .. k+2]
    EXPECT_EQ(dw[2], 2 + 3 + 4);
    EXPECT_EQ(dw[3], 3 + 4 + 5);
}

struct BadCall {
    const char *what;
    convgrad_status code;
    const char *message_part;
};

// Every rejection: a status, a message naming the argument, the result left as it was.
TEST(CApi, RejectsBadInputCleanly) {
    std::vector<float> x(2 * 6 * 3), dy(2 * 4 * 4), dx(2 * 6 * 3), w(3 * 3 * 4);
    int64_t xs[3] = {2, 6, 3}, ys[3] = {2, 4, 4}, wsh[3] = {3, 3, 4};
    const DLDataType f32 = {kDLFloat, 32, 1};
    const auto make = [&](std::vector<float> &v, int64_t *shape) {
        return DLTensor{v.data(), {kDLCPU, 0}, 3, f32, shape, nullptr, 0};
    };
    const convgrad_conv_desc good = convgrad_conv_desc_default(1);
    {
        DLTensor a = make(dy, ys), b = make(w, wsh), r = make(dx, xs);
        ASSERT_EQ(convgrad_backward_data(&good, &a, &b, &r), CONVGRAD_OK) << convgrad_last_error();
    }
    for (int which = 0; which < 12; which++) {
        convgrad_conv_desc d = good;
        DLTensor a = make(dy, ys), b = make(w, wsh), r = make(dx, xs);
        int64_t short_shape[2] = {2, 6}, wrong_w[3] = {3, 2, 4};
        const convgrad_conv_desc *dp = &d;
        const DLTensor *ap = &a, *bp = &b;
        BadCall want{};
        switch (which) {
            case 0: dp = nullptr, want = {"NULL desc", CONVGRAD_INVALID_ARGUMENT, "desc"}; break;
            case 1: d.version = 99, want = {"version", CONVGRAD_INVALID_ARGUMENT, "desc.version"}; break;
            case 2: d.spatial_rank = 4, want = {"rank", CONVGRAD_INVALID_ARGUMENT, "desc.spatial_rank"}; break;
            case 3: d.filter_layout = 7, want = {"filter layout", CONVGRAD_INVALID_ARGUMENT, "desc.filter_layout"}; break;
            case 4: ap = nullptr, want = {"NULL dy", CONVGRAD_INVALID_ARGUMENT, "dy"}; break;
            case 5: b.device.device_type = kDLVulkan, want = {"Vulkan tensor", CONVGRAD_UNSUPPORTED, "w: device type"}; break;
            case 6: a.dtype.lanes = 2, want = {"vector dtype", CONVGRAD_INVALID_ARGUMENT, "dy: vector"}; break;
            case 7: a.dtype = {kDLUInt, 8, 1}, want = {"uint8", CONVGRAD_INVALID_ARGUMENT, "dy: dtype"}; break;
            case 8: b.dtype = {kDLFloat, 64, 1}, want = {"mixed dtypes", CONVGRAD_INVALID_ARGUMENT, "w"}; break;
            case 9: r.ndim = 2, r.shape = short_shape, want = {"ndim", CONVGRAD_INVALID_ARGUMENT, "dx: expected 3"}; break;
            case 10: b.shape = wrong_w, want = {"filter channels", CONVGRAD_INVALID_ARGUMENT, "w"}; break;
            case 11: d.strides[0] = 2, want = {"stride vs sizes", CONVGRAD_INVALID_ARGUMENT, "output"}; break;
        }
        SCOPED_TRACE(want.what);
        std::fill(dx.begin(), dx.end(), -7.f);
        const convgrad_status s = convgrad_backward_data(dp, ap, bp, &r);
        EXPECT_EQ(s, want.code);
        EXPECT_NE(std::strstr(convgrad_last_error(), want.message_part), nullptr) << convgrad_last_error();
        for (float v : dx) ASSERT_EQ(v, -7.f) << "the result was written";
    }
}

TEST(CApi, VersionAndThreads) {
    EXPECT_NE(std::strstr(convgrad_version(), "C API 1"), nullptr);
    convgrad_set_num_threads(1);
    convgrad_set_num_threads(0);  // back to the default
}

}  // namespace
}  // namespace convgrad::test
