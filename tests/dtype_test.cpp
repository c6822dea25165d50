// The precision contract of every dtype, asserted element by element against the float64
// reference on random data (inputs rounded to the dtype first, so the reference sees exactly
// what the kernel sees):
//
//   float16/bfloat16/float32:  |got - ref| <= u_out |ref| + (1 + u_out) * gamma_n(u_acc) * sum|terms|
//   float64:                    the same with u_out = u_acc = 2^-53
//   int32:                      exact, wrapping modulo 2^32 like TF
//
// u_out is the result dtype's unit roundoff (f16 2^-11, bf16 2^-8, f32 2^-24, f64 2^-53),
// u_acc the accumulator's (float32 for 16-bit dtypes), gamma_n(u) = n u / (1 - n u) for n
// terms per result element (the classic bound on any summation order, FMA or not), and
// sum|terms| the reference on absolute values. float16 adds 2^-25 absolute for subnormals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>

#include "convgrad/onednn.h"
#include "convgrad/onnx.h"
#include "contract.h"
#include "reference_nd.h"
#include "registry_cpu.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

int case_count() {
    const char *env = std::getenv("CONVGRAD_TEST_CASES");
    return env ? std::max(10, std::atoi(env) / 3) : 100;
}

TEST(DtypeContract, Float32) { check_dtype(DType::kFloat32, ProblemMix::kSmall, 101, case_count()); }
TEST(DtypeContract, Float64) { check_dtype(DType::kFloat64, ProblemMix::kSmall, 102, case_count()); }
TEST(DtypeContract, Float16) { check_dtype(DType::kFloat16, ProblemMix::kSmall, 103, case_count()); }
TEST(DtypeContract, BFloat16) { check_dtype(DType::kBFloat16, ProblemMix::kSmall, 104, case_count()); }
TEST(DtypeContract, Int32) { check_dtype(DType::kInt32, ProblemMix::kSmall, 105, case_count()); }

// Filter gradients reduce over N*OH*OW = 4*64*64 ≈ 16k terms: where f16 error grows.
TEST(DtypeContract, LongReductions) {
    const int problems = std::getenv("CONVGRAD_TEST_CASES") ? 2 : 4;  // fewer under qemu
    for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
        check_dtype(t, ProblemMix::kLongReductions, 106, problems);
    }
}

// The Winograd kernels where dx outgrows dy's reach (pads_end -1: dx's last row and column
// read no dy and are zeros, and take no part in the filter gradient), in `dtype` (each its
// own variant), NHWC/HWIO or NCHW/OIHW (`nxc`); the kernels without the direction.
void expect_winograd_past_dy(DType t, bool nxc, const std::string &data_kernel, const std::string &filter_kernel,
                             double tolerance) {
    NdConv c;
    c.rank = 2, c.batch = 2, c.groups = 1, c.cin = 32, c.cout = 64;
    c.in = {12, 13}, c.out = {10, 11}, c.kernel = {3, 3}, c.stride = {1, 1}, c.dilation = {1, 1}, c.pad_begin = {1, 1};
    const ConvProblem p = to_problem(c, t, nxc, nxc);
    ASSERT_EQ(p.pads_end[0], -1);
    Rng rng(29);
    const auto w = random_values(num_elements(c.w_shape()), rng), dy = random_values(num_elements(c.dy_shape()), rng);
    const auto x = random_values(num_elements(c.x_shape()), rng);
    // The test's tensors are NCX/OIX; NHWC/HWIO permuted.
    const auto act = [&](const std::vector<double> &v, const std::vector<int64_t> &shape) {
        return nxc ? permute(v, shape, ncx_to_nxc(2)) : v;
    };
    const auto filter = [&](const std::vector<double> &v) { return nxc ? permute(v, c.w_shape(), oix_to_xio(2)) : v; };
    RunResult r = run_problem(p, Direction::kBackwardData, act(dy, c.dy_shape()), filter(w), false);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    EXPECT_EQ(r.kernel, kernel_on_this_path("bwd_data_" + data_kernel));
    EXPECT_LE(relative_error(r.result, act(nd_backprop_data(c, w, dy), c.x_shape())), tolerance);
    r = run_problem(p, Direction::kBackwardWeights, act(x, c.x_shape()), act(dy, c.dy_shape()), false);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    EXPECT_EQ(r.kernel, kernel_on_this_path("bwd_weights_" + filter_kernel));
    EXPECT_LE(relative_error(r.result, filter(nd_backprop_filter(c, x, dy))), tolerance);
}

TEST(DtypeContract, WinogradPastDyFloat32) {
    expect_winograd_past_dy(DType::kFloat32, true, "f32_nxc_wg", "f32_nxc_wg", 1e-5);
    expect_winograd_past_dy(DType::kFloat32, false, "f32_ncx_wg", "f32_ncx_wg", 1e-5);
}
// float64 keeps the direct sum: no Winograd kernel is built for it (generators/CMakeLists.txt);
// the data gradient's 32 dx channels go to the channel-slab kernels.
TEST(DtypeContract, WinogradShapesInFloat64StayDirect) {
    expect_winograd_past_dy(DType::kFloat64, true, "f64_nxc_cs", "f64_nxc", 1e-12);
    expect_winograd_past_dy(DType::kFloat64, false, "f64_ncx_cs", "f64_ncx", 1e-12);
}

// The small-group filter-gradient kernels (nxc_sg, ncx_sg: pairs of groups of 8 dy channels,
// 8 or more x channels each) in `dtype`, NHWC/HWIO or NCHW/OIHW (`nchw`): 3-wide filters (a tile over a row of 3 taps),
// 16 x channels per group, and a 5x5 filter (a tap per tile); `kernel` is the one expected.
void expect_small_group_filters(DType t, const std::string &kernel, double tolerance, bool nchw = false) {
    struct Shape {
        int64_t groups, cin, h, w, k;
    };
    for (const Shape &s : {Shape{4, 32, 9, 11, 3}, Shape{2, 32, 7, 10, 3}, Shape{4, 32, 8, 9, 5}}) {
        NdConv c;
        c.rank = 2, c.batch = 2, c.groups = s.groups, c.cin = s.cin, c.cout = 8 * s.groups;
        c.in = {s.h, s.w}, c.out = {s.h, s.w}, c.kernel = {s.k, s.k}, c.stride = {1, 1}, c.dilation = {1, 1};
        c.pad_begin = {s.k / 2, s.k / 2};
        SCOPED_TRACE("groups " + std::to_string(s.groups) + ", " + std::to_string(s.cin) + " x channels, " +
                     std::to_string(s.k) + "x" + std::to_string(s.k));
        const ConvProblem p = to_problem(c, t, !nchw, !nchw);
        Rng rng(31);
        const auto x = random_values(num_elements(c.x_shape()), rng), dy = random_values(num_elements(c.dy_shape()), rng);
        const RunResult r = nchw ? run_problem(p, Direction::kBackwardWeights, x, dy, false)
                                 : run_problem(p, Direction::kBackwardWeights, permute(x, c.x_shape(), ncx_to_nxc(2)),
                                               permute(dy, c.dy_shape(), ncx_to_nxc(2)), false);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        EXPECT_EQ(r.kernel, kernel_on_this_path("bwd_weights_" + kernel));
        const auto expected = nd_backprop_filter(c, x, dy);
        EXPECT_LE(relative_error(r.result, nchw ? expected : permute(expected, c.w_shape(), oix_to_xio(2))), tolerance);
    }
}

TEST(DtypeContract, SmallGroupFiltersFloat32) { expect_small_group_filters(DType::kFloat32, "f32_nxc_sg", 1e-5); }
TEST(DtypeContract, SmallGroupFiltersNchwFloat32) { expect_small_group_filters(DType::kFloat32, "f32_ncx_sg", 1e-5, true); }
// float64 builds no small-group kernel (generators/CMakeLists.txt): the same shapes run on
// the direct ones.
TEST(DtypeContract, SmallGroupShapesInFloat64StayDirect) {
    expect_small_group_filters(DType::kFloat64, "f64_nxc", 1e-12);
    expect_small_group_filters(DType::kFloat64, "f64_ncx", 1e-12, true);
}

// NCHW data gradients on the channel-slab kernel (ncx_cs) with OIHW 1x1 filters: input
// channels contiguous and in whole slabs, the branch that packs the filter by vectors
// (schedules/cpu_bwd_data.cpp), and dx copied through TransposedRows; a 7x7 plane (a flat
// row of 49, which ncx_cs keeps) and a 3x5 one, in `dtype`.
void expect_oix_pointwise_slabs(DType t, const std::string &kernel, double tolerance) {
    for (const std::vector<int64_t> &size : {std::vector<int64_t>{7, 7}, std::vector<int64_t>{3, 5}}) {
        NdConv c;
        c.rank = 2, c.batch = 2, c.groups = 1, c.cin = 64, c.cout = 40;
        c.in = size, c.out = size, c.kernel = {1, 1}, c.stride = {1, 1}, c.dilation = {1, 1}, c.pad_begin = {0, 0};
        SCOPED_TRACE(std::to_string(size[0]) + "x" + std::to_string(size[1]));
        const ConvProblem p = to_problem(c, t, false, false);
        Rng rng(41);
        const auto w = random_values(num_elements(c.w_shape()), rng), dy = random_values(num_elements(c.dy_shape()), rng);
        const RunResult r = run_problem(p, Direction::kBackwardData, dy, w, false);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        EXPECT_EQ(r.kernel, kernel_on_this_path("bwd_data_" + kernel));
        EXPECT_LE(relative_error(r.result, nd_backprop_data(c, w, dy)), tolerance);
    }
}

// A channels-last (NXC, XIO) depthwise filter gradient of `c` on random data: the kernel
// `kernel` runs it, within 1e-12 (float64) or 1e-5 of the float64 reference.
void expect_nhwc_depthwise_filters(const NdConv &c, DType dtype, const std::string &kernel, uint64_t seed) {
    const ConvProblem p = to_problem(c, dtype, true, true);
    Rng rng(seed);
    const auto x = random_values(num_elements(c.x_shape()), rng), dy = random_values(num_elements(c.dy_shape()), rng);
    const RunResult r = run_problem(p, Direction::kBackwardWeights, permute(x, c.x_shape(), ncx_to_nxc(c.rank)),
                                    permute(dy, c.dy_shape(), ncx_to_nxc(c.rank)), false);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    EXPECT_EQ(r.kernel, kernel_on_this_path(kernel));
    const double tolerance = dtype == DType::kFloat64 ? 1e-12 : 1e-5;
    EXPECT_LE(relative_error(r.result, permute(nd_backprop_filter(c, x, dy), c.w_shape(), oix_to_xio(c.rank))), tolerance);
}

TEST(DtypeContract, OixPointwiseSlabsFloat32) { expect_oix_pointwise_slabs(DType::kFloat32, "f32_ncx_cs", 1e-5); }
TEST(DtypeContract, OixPointwiseSlabsFloat64) { expect_oix_pointwise_slabs(DType::kFloat64, "f64_ncx_cs", 1e-12); }

// The depthwise plain-x filter gradient (nxg_xp, kernel_registry.h) in 3-D (NDHWC, a 3x3x1
// filter: frames of planes and rows, the planes' in rows inside x), float32; float64, which
// has no plain-x variant, on nxg.
TEST(DtypeContract, DepthwisePlainX3d) {
    NdConv c;
    c.rank = 3, c.batch = 2, c.groups = 32, c.cin = 32, c.cout = 32;
    c.in = {12, 14, 16}, c.out = {12, 14, 16}, c.kernel = {3, 3, 1}, c.stride = {1, 1, 1}, c.dilation = {1, 1, 1};
    c.pad_begin = {1, 1, 0};
    const ScopedRegistryCpu other(RegistryCpu::kOther);  // nxg_xp on any host's path
    expect_nhwc_depthwise_filters(c, DType::kFloat32, "bwd_weights_f32_nxg_xp", 38);
    expect_nhwc_depthwise_filters(c, DType::kFloat64, "bwd_weights_f64_nxg", 39);
}

// int32 wraps on overflow exactly like TF: large products summed past 2^31.
TEST(DtypeContract, Int32WrapsOnOverflow) {
    NdConv c;
    c.rank = 1, c.batch = 1, c.groups = 1, c.cin = 3, c.cout = 2;
    c.in = {9}, c.out = {7}, c.kernel = {3}, c.stride = {1}, c.dilation = {1}, c.pad_begin = {0};
    const ConvProblem p = to_problem(c, DType::kInt32, false, false);
    Rng rng(107);
    auto big = [&](int64_t n) {
        std::vector<double> v(n);
        for (double &x : v) x = static_cast<double>(pick(rng, 1 << 19, 1 << 21)) * (pick(rng, 0, 1) ? 1 : -1);
        return v;
    };
    const auto x = big(num_elements(c.x_shape())), w = big(num_elements(c.w_shape())), dy = big(num_elements(c.dy_shape()));
    const auto ref_data = nd_backprop_data(c, w, dy);
    bool overflowed = false;
    for (double v : ref_data) overflowed = overflowed || std::fabs(v) > 2147483647.0;
    ASSERT_TRUE(overflowed) << "the test must actually overflow int32";
    RunResult r = run_problem(p, Direction::kBackwardData, dy, w, false);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    check_contract(DType::kInt32, r.result, ref_data, {}, 0);
    r = run_problem(p, Direction::kBackwardWeights, x, dy, false);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    check_contract(DType::kInt32, r.result, nd_backprop_filter(c, x, dy), {}, 0);
}

// Every op of every frontend in every dtype: the dtype travels from the frontend to the
// kernel, and the result meets the contract. The reference problem is read back from the
// resolved (f32-tested) canonical problem; the tensors go in the op's own layouts.
NdConv from_problem(const ConvProblem &p) {
    NdConv c;
    c.rank = p.spatial_rank, c.batch = p.batch, c.groups = p.groups, c.cin = p.in_channels, c.cout = p.out_channels;
    for (int a = 0; a < p.spatial_rank; a++) {
        c.in.push_back(p.input_size[a]), c.out.push_back(p.output_size[a]), c.kernel.push_back(p.kernel_size[a]);
        c.stride.push_back(p.strides[a]), c.dilation.push_back(p.dilations[a]), c.pad_begin.push_back(p.pads_begin[a]);
    }
    return c;
}

TEST(DtypeContract, EveryOpInEveryDtype) {
    struct Op {
        const char *name;
        Direction direction;
        std::function<Result<ConvProblem>(DType)> resolve;
    };
    const tf::ConvAttrs tf2{{1, 2, 1, 1}, {1, 1, 2, 1}, "SAME", {}, "NHWC"};
    const tf::ConvAttrs tf3{{1, 1, 2, 1, 1}, {}, "VALID", {}, "NCDHW"};
    // NCHW depthwise with unit strides and 90-position planes: the flat-plane kernels (f32, f64).
    const tf::ConvAttrs tf2_planes{{1, 1, 1, 1}, {}, "SAME", {}, "NCHW"};
    onednn::ConvAttrs dnnl;
    dnnl.auto_pad = "same_lower", dnnl.groups = 2, dnnl.data_format = "NCX", dnnl.filter_format = "OIX";
    onnx::ConvTransposeAttrs ct;
    ct.strides = {2}, ct.pads = {1, 0}, ct.group = 2;
    const std::vector<Op> ops = {
        {"Conv2DBackpropInput", Direction::kBackwardData,
         [&](DType t) { return tf::conv2d_backprop_input(tf2, {2, 7, 6, 4}, {3, 2, 2, 6}, {2, 4, 6, 6}, t); }},
        {"Conv2DBackpropFilter", Direction::kBackwardWeights,
         [&](DType t) { return tf::conv2d_backprop_filter(tf2, {2, 7, 6, 4}, {3, 2, 2, 6}, {2, 4, 6, 6}, t); }},
        {"DepthwiseConv2dNativeBackpropInput", Direction::kBackwardData,
         [&](DType t) { return tf::depthwise_conv2d_backprop_input(tf2, {2, 7, 6, 3}, {3, 2, 3, 2}, {2, 4, 6, 6}, t); }},
        {"DepthwiseConv2dNativeBackpropFilter", Direction::kBackwardWeights,
         [&](DType t) { return tf::depthwise_conv2d_backprop_filter(tf2, {2, 7, 6, 3}, {3, 2, 3, 2}, {2, 4, 6, 6}, t); }},
        {"DepthwiseConv2dNativeBackpropInput NCHW", Direction::kBackwardData,
         [&](DType t) { return tf::depthwise_conv2d_backprop_input(tf2_planes, {2, 3, 9, 10}, {3, 3, 3, 1}, {2, 3, 9, 10}, t); }},
        {"DepthwiseConv2dNativeBackpropFilter NCHW", Direction::kBackwardWeights,
         [&](DType t) { return tf::depthwise_conv2d_backprop_filter(tf2_planes, {2, 3, 9, 10}, {3, 3, 3, 1}, {2, 3, 9, 10}, t); }},
        {"Conv3DBackpropInputV2", Direction::kBackwardData,
         [&](DType t) { return tf::conv3d_backprop_input_v2(tf3, {1, 3, 5, 4, 4}, {2, 2, 2, 3, 2}, {1, 2, 2, 3, 3}, t); }},
        {"Conv3DBackpropFilterV2", Direction::kBackwardWeights,
         [&](DType t) { return tf::conv3d_backprop_filter_v2(tf3, {1, 3, 5, 4, 4}, {2, 2, 2, 3, 2}, {1, 2, 2, 3, 3}, t); }},
        {"ConvolutionBackpropData", Direction::kBackwardData,
         [&](DType t) { return onednn::convolution_backprop_data(dnnl, {2, 4, 5}, {4, 2, 3}, {5}, t); }},
        {"ConvolutionBackpropFilters", Direction::kBackwardWeights,
         [&](DType t) { return onednn::convolution_backprop_filters(dnnl, {2, 4, 5}, {2, 4, 5}, {3}, t); }},
        {"ConvTranspose", Direction::kBackwardData,
         [&](DType t) { return onnx::conv_transpose(ct, {1, 4, 3}, {4, 3, 3}, t); }},
    };
    Rng rng(108);
    for (const Op &op : ops) {
        for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kInt32}) {
            SCOPED_TRACE(std::string(op.name) + " " + dtype_name(t));
            auto p = op.resolve(t);
            ASSERT_TRUE(p.is_ok()) << p.status.message();
            ASSERT_EQ(p.value.dtype, t);
            const NdConv c = from_problem(p.value);
            const bool nxc = p.value.activation_layout == ActivationLayout::kNXC;
            // Filters in the op's layout: OIX as is, XIO and XGM (same bytes as XIO) permuted.
            const Layouts layouts{c, nxc, p.value.filter_layout != FilterLayout::kOIX};
            const auto x = random_inputs(t, num_elements(c.x_shape()), rng, 100);
            const auto w = random_inputs(t, num_elements(c.w_shape()), rng, 100);
            const auto dy = random_inputs(t, num_elements(c.dy_shape()), rng, 100);
            int64_t taps = 1, positions = c.batch;
            for (int a = 0; a < c.rank; a++) taps *= c.kernel[a], positions *= c.out[a];
            if (op.direction == Direction::kBackwardData) {
                const RunResult r = run_problem(
                    p.value, op.direction, layouts.to_act(dy, c.dy_shape()), layouts.to_filter(w), false);
                ASSERT_TRUE(r.status.is_ok()) << r.status.message();
                check_contract(t, layouts.from_act(r.result, c.x_shape()), nd_backprop_data(c, w, dy),
                               nd_backprop_data(c, absolute(w), absolute(dy)), (c.cout / c.groups) * taps);
            } else {
                const RunResult r = run_problem(
                    p.value, op.direction, layouts.to_act(x, c.x_shape()), layouts.to_act(dy, c.dy_shape()), false);
                ASSERT_TRUE(r.status.is_ok()) << r.status.message();
                check_contract(t, layouts.from_filter(r.result), nd_backprop_filter(c, x, dy),
                               nd_backprop_filter(c, absolute(x), absolute(dy)), positions);
            }
        }
    }
}

}  // namespace
}  // namespace convgrad::test
