// The Halide runtime's own checks must surface as a Status, never abort(): call a kernel
// directly (bypassing the registry's predicate) with a view that breaks its stride assertion.
#include <gtest/gtest.h>

#include "halide_bridge.h"
#include "kernel_registry.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

TEST(HalideErrors, KernelAssertionBecomesStatus) {
    ConvProblem p;
    p.in_channels = p.out_channels = 4;
    p.input_size = p.output_size = {3, 3, 1};
    HostTensor dy(output_shape(p), true), w(filter_shape(p), false), dx(input_shape(p), true);  // gapped: c stride 2
    Rng rng(4);
    dy.fill(random_values(dy.tensor.num_elements(), rng));
    w.fill(random_values(w.tensor.num_elements(), rng));
    auto vdy = make_view(p, TensorRole::kOutput, dy.tensor, "dy", false);
    auto vw = make_view(p, TensorRole::kFilter, w.tensor, "w", false);
    auto vdx = make_view(p, TensorRole::kInput, dx.tensor, "dx", true);
    ASSERT_TRUE(vdy.is_ok() && vw.is_ok() && vdx.is_ok());

    const KernelEntry *nxc = nullptr;
    for (const KernelEntry &k : kernel_table()) {
        if (std::string(k.name) == "bwd_data_f32_nxc") nxc = &k;
    }
    ASSERT_NE(nxc, nullptr);
    EXPECT_FALSE(nxc->accepts(Direction::kBackwardData, p, vdy.value, vdx.value, Placement{}));
    Status s = run_kernel(*nxc, p, vdy.value, vw.value, vdx.value);
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("bwd_data_f32_nxc"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("stride"), std::string::npos) << "Halide's message is kept: " << s.message();

    // The registry routes the same views to the stride-agnostic kernel, which succeeds.
    EXPECT_TRUE(backward_data(p, dy.tensor, w.tensor, dx.tensor).is_ok());
}

// The small-group kernel stages dy with kSmallGroupChannels slots per pixel: given wider
// groups (which the registry never routes to it), it fails with a status instead of writing
// past its staging buffer.
TEST(HalideErrors, SmallGroupKernelRefusesWiderGroups) {
    ConvProblem p;
    p.groups = 2;
    p.in_channels = 16;
    p.out_channels = 2 * (kSmallGroupChannels + 1);
    p.input_size = p.output_size = {5, 5, 1};
    p.kernel_size = {3, 3, 1};
    p.pads_begin = {1, 1, 0};
    p.pads_end = {1, 1, 0};
    HostTensor dy(output_shape(p), false), w(filter_shape(p), false), dx(input_shape(p), false);
    Rng rng(5);
    dy.fill(random_values(dy.tensor.num_elements(), rng));
    w.fill(random_values(w.tensor.num_elements(), rng));
    auto vdy = make_view(p, TensorRole::kOutput, dy.tensor, "dy", false);
    auto vw = make_view(p, TensorRole::kFilter, w.tensor, "w", false);
    auto vdx = make_view(p, TensorRole::kInput, dx.tensor, "dx", true);
    ASSERT_TRUE(vdy.is_ok() && vw.is_ok() && vdx.is_ok());

    const KernelEntry *sg = nullptr;
    for (const KernelEntry &k : kernel_table()) {
        if (std::string(k.name) == "bwd_data_f32_nxc_sg") sg = &k;
    }
    ASSERT_NE(sg, nullptr);
    EXPECT_FALSE(sg->accepts(Direction::kBackwardData, p, vdy.value, vdx.value, Placement{}));
    Status s = run_kernel(*sg, p, vdy.value, vw.value, vdx.value);
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("bwd_data_f32_nxc_sg"), std::string::npos) << s.message();
    EXPECT_TRUE(backward_data(p, dy.tensor, w.tensor, dx.tensor).is_ok());  // nxc takes it
}

}  // namespace
}  // namespace convgrad::test
