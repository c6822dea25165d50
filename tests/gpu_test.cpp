// GPU kernels (CUDA and OpenCL): the CPU's dtype contract on the same random problems (ranks
// 1-3, groups, strides, dilations, pads, NXC/NCX, XIO/OIX, gapped strides), run on every GPU
// api with a device here, with tensors in host memory and in device memory. CI has no GPU:
// OpenCL runs on PoCL's CPU device, CUDA is checked on its error paths; on a machine with an
// NVIDIA GPU the same binary tests CUDA (scripts/gpu-check.sh).
// This binary must not link libHalide: its LLVM and PoCL's clash in one process.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>

#include "contract.h"
#include "convgrad.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

bool has_device(Device api) {
    for (const DeviceInfo &d : devices()) {
        if (d.api == api) return true;
    }
    return false;
}

// The OpenCL device's extensions, as `convgrad info` reports them ("gpu, fp64, no fp16").
bool opencl_has(const char *extension) {
    for (const DeviceInfo &d : devices()) {
        if (d.api == Device::kOpenCL) return d.detail.find(std::string(", ") + extension) != std::string::npos;
    }
    return false;
}

int cases() {
    const char *env = std::getenv("CONVGRAD_TEST_CASES");
    return env ? std::max(5, std::atoi(env) / 10) : 20;
}

class GpuContract : public ::testing::TestWithParam<Device> {
protected:
    void SetUp() override {
        const Device api = GetParam();
        if (!gpu_kernels_built(api)) GTEST_SKIP() << device_name(api) << " kernels are not built (CONVGRAD_GPU=OFF)";
        if (!has_device(api)) GTEST_SKIP() << "no " << device_name(api) << " device on this machine";
    }
    bool dtype_supported(DType t) const {
        if (GetParam() != Device::kOpenCL) return true;
        if (t == DType::kFloat64) return opencl_has("fp64");
        if (t == DType::kFloat16) return opencl_has("fp16");
        return true;
    }
    void check(DType t, uint64_t seed, bool device_memory, ProblemMix mix = ProblemMix::kSmall) {
        if (!dtype_supported(t)) GTEST_SKIP() << "the OpenCL device lacks " << dtype_name(t) << " (see Float16Unsupported)";
        const int n = mix == ProblemMix::kSmall ? cases() : mix == ProblemMix::kLongReductions ? 2 : 4;
        check_dtype(t, mix, seed, n, TestDevice{GetParam(), device_memory});
    }
};

TEST_P(GpuContract, Float32) { check(DType::kFloat32, 201, false); }
TEST_P(GpuContract, Float32DeviceMemory) { check(DType::kFloat32, 202, true); }
TEST_P(GpuContract, Float64) { check(DType::kFloat64, 203, false); }
TEST_P(GpuContract, Float16) { check(DType::kFloat16, 204, false); }
TEST_P(GpuContract, BFloat16) { check(DType::kBFloat16, 205, false); }
TEST_P(GpuContract, BFloat16DeviceMemory) { check(DType::kBFloat16, 206, true); }
TEST_P(GpuContract, Int32) { check(DType::kInt32, 207, false); }
// N*OH*OW = 4*64*64 terms per filter-gradient element: the partial sums over (n, 8 rows).
TEST_P(GpuContract, LongReductions) {
    for (DType t : {DType::kFloat32, DType::kBFloat16}) check(t, 208, false, ProblemMix::kLongReductions);
}
// 16-40 channels per group: the data gradient's 32-channel thread blocks (schedules/
// gpu_bwd_data.cpp), which the small problems above (at most 5 per group) never reach.
TEST_P(GpuContract, WideChannels) {
    for (DType t : {DType::kFloat32, DType::kBFloat16}) check(t, 209, false, ProblemMix::kWideChannels);
}

// The kernel that runs is the device's, not a CPU one.
TEST_P(GpuContract, DispatchesToTheDevice) {
    ConvProblem p;
    p.input_size = p.output_size = {5, 4, 1};
    p.kernel_size = {3, 3, 1};
    p.pads_begin = p.pads_end = {1, 1, 0};
    const std::vector<double> dy = std::vector<double>(num_elements(output_shape(p)), 0.5);
    const std::vector<double> w = std::vector<double>(num_elements(filter_shape(p)), 0.25);
    const RunResult r = run_problem(p, Direction::kBackwardData, dy, w, false, TestDevice{GetParam(), false});
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    EXPECT_NE(r.kernel.find(device_name(GetParam())), std::string::npos) << r.kernel;
}

// A dtype the device cannot run (OpenCL without cl_khr_fp16/fp64) fails cleanly: a status
// with the driver's reason, the result untouched.
TEST_P(GpuContract, MissingExtensionIsAnError) {
    if (GetParam() != Device::kOpenCL || opencl_has("fp16")) GTEST_SKIP() << "the device has fp16";
    ConvProblem p;
    p.dtype = DType::kFloat16;
    p.input_size = p.output_size = {4, 4, 1};
    const std::vector<double> ones(16, 1.0);
    const RunResult r = run_problem(p, Direction::kBackwardData, ones, {1.0}, false, TestDevice{GetParam(), false});
    EXPECT_FALSE(r.status.is_ok());
    EXPECT_NE(r.status.message().find("bwd_data_f16_opencl"), std::string::npos) << r.status.message();
    for (double v : r.result) EXPECT_TRUE(std::isnan(v)) << "the poisoned result must stay untouched";
}

// The C API takes DLPack tensors in device memory (kDLCUDA, kDLOpenCL) and runs there; the
// result matches the CPU's to rounding.
TEST_P(GpuContract, CApiDeviceTensors) {
    const Device api = GetParam();
    convgrad_conv_desc d = convgrad_conv_desc_default(2);
    d.strides[0] = 2, d.pads_begin[0] = d.pads_begin[1] = 1, d.pads_end[1] = 1;
    int64_t dy_shape[] = {2, 4, 6, 8}, w_shape[] = {3, 3, 5, 8}, dx_shape[] = {2, 8, 6, 5};  // NHWC, HWIO
    Rng rng(212);
    std::vector<float> dy(2 * 4 * 6 * 8), w(3 * 3 * 5 * 8), dx_cpu(2 * 8 * 6 * 5, NAN), dx_gpu(dx_cpu.size(), NAN);
    for (auto *v : {&dy, &w}) {
        const auto r = random_values(static_cast<int64_t>(v->size()), rng);
        v->assign(r.begin(), r.end());
    }
    auto dl = [](void *data, int64_t *shape, DLDevice dev) {
        DLTensor t{};
        t.data = data, t.device = dev, t.ndim = 4, t.dtype = {kDLFloat, 32, 1}, t.shape = shape;
        return t;
    };
    const DLDevice host{kDLCPU, 0}, gpu{api == Device::kCuda ? kDLCUDA : kDLOpenCL, 0};
    DLTensor tdy = dl(dy.data(), dy_shape, host), tw = dl(w.data(), w_shape, host), tdx = dl(dx_cpu.data(), dx_shape, host);
    ASSERT_EQ(convgrad_backward_data(&d, &tdy, &tw, &tdx), CONVGRAD_OK) << convgrad_last_error();

    std::unique_ptr<DeviceMemory> m[3];
    std::vector<float> *host_data[3] = {&dy, &w, &dx_gpu};
    for (int i = 0; i < 3; i++) {
        auto r = DeviceMemory::allocate(api, host_data[i]->size() * sizeof(float));
        ASSERT_TRUE(r.is_ok()) << r.status.message();
        m[i] = std::move(r.value);
        ASSERT_TRUE(m[i]->upload(host_data[i]->data()).is_ok());
    }
    tdy = dl(m[0]->handle(), dy_shape, gpu), tw = dl(m[1]->handle(), w_shape, gpu), tdx = dl(m[2]->handle(), dx_shape, gpu);
    ASSERT_EQ(convgrad_backward_data(&d, &tdy, &tw, &tdx), CONVGRAD_OK) << convgrad_last_error();
    ASSERT_TRUE(m[2]->download(dx_gpu.data()).is_ok());
    EXPECT_LE(relative_error(std::vector<double>(dx_gpu.begin(), dx_gpu.end()),
                             std::vector<double>(dx_cpu.begin(), dx_cpu.end())),
              1e-6);

    // A device tensor that does not start at its cl_mem is refused (OpenCL buffers have no offset).
    if (api == Device::kOpenCL) {
        tdx.byte_offset = 4;
        EXPECT_EQ(convgrad_backward_data(&d, &tdy, &tw, &tdx), CONVGRAD_UNSUPPORTED);
        EXPECT_NE(std::string(convgrad_last_error()).find("byte_offset"), std::string::npos) << convgrad_last_error();
    }
}

INSTANTIATE_TEST_SUITE_P(Apis, GpuContract, ::testing::Values(Device::kCuda, Device::kOpenCL),
                         [](const auto &info) { return std::string(device_name(info.param)); });

// --- Without a device: errors, never crashes; auto runs on the CPU ---

ConvProblem small_problem() {
    ConvProblem p;
    p.batch = 2, p.in_channels = 3, p.out_channels = 4;
    p.input_size = {6, 5, 1};
    p.kernel_size = {3, 3, 1};
    p.output_size = {6, 5, 1};
    p.pads_begin = p.pads_end = {1, 1, 0};
    return p;
}

TEST(GpuErrors, CudaWithoutADeviceIsUnsupported) {
    if (has_device(Device::kCuda)) GTEST_SKIP() << "this machine has a CUDA device";
    const ConvProblem p = small_problem();
    Rng rng(210);
    const RunResult r = run_problem(p, Direction::kBackwardData, random_values(num_elements(output_shape(p)), rng),
                                    random_values(num_elements(filter_shape(p)), rng), false,
                                    TestDevice{Device::kCuda, false});
    EXPECT_EQ(r.status.code(), StatusCode::kUnsupported) << r.status.message();
    EXPECT_NE(r.status.message().find("cuda"), std::string::npos) << r.status.message();
    for (double v : r.result) ASSERT_TRUE(std::isnan(v)) << "the poisoned result must stay untouched";
}

TEST(GpuErrors, AutoWithoutCudaRunsOnTheCpu) {
    if (has_device(Device::kCuda)) GTEST_SKIP() << "this machine has a CUDA device: auto runs there";
    const ConvProblem p = small_problem();
    Rng rng(211);
    const auto dy = random_values(num_elements(output_shape(p)), rng);
    const auto w = random_values(num_elements(filter_shape(p)), rng);
    const RunResult cpu = run_problem(p, Direction::kBackwardData, dy, w, false, TestDevice{Device::kCpu, false});
    const RunResult autod = run_problem(p, Direction::kBackwardData, dy, w, false, TestDevice{Device::kAuto, false});
    ASSERT_TRUE(autod.status.is_ok()) << autod.status.message();
    EXPECT_EQ(autod.kernel, cpu.kernel);
    EXPECT_EQ(autod.result, cpu.result);
}

// Device memory the call cannot read is refused before anything touches it (the pointers
// here are not even valid device memory).
TEST(GpuErrors, MemoryAndDeviceMustAgree) {
    const ConvProblem p = small_problem();
    std::vector<float> dx(num_elements(input_shape(p)));
    int fake = 0;
    Tensor dy{&fake, DType::kFloat32, output_shape(p), {}, Device::kCuda};
    Tensor w{&fake, DType::kFloat32, filter_shape(p), {}, Device::kOpenCL};
    Tensor tdx{dx.data(), DType::kFloat32, input_shape(p), {}};
    RunOptions cpu;
    Status s = backward_data(p, dy, w, tdx, cpu);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    EXPECT_NE(s.message().find("cuda memory"), std::string::npos) << s.message();
    w.device = Device::kCuda;
    s = backward_data(p, dy, w, tdx, cpu);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    EXPECT_NE(s.message().find("run it on cuda"), std::string::npos) << s.message();
    RunOptions opencl;
    opencl.device = Device::kOpenCL;
    s = backward_data(p, dy, w, tdx, opencl);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    Tensor auto_tensor = tdx;
    auto_tensor.device = Device::kAuto;
    s = backward_data(p, dy, w, auto_tensor, RunOptions{});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
}

}  // namespace
}  // namespace convgrad::test
