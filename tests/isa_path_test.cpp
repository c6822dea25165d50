// Which x86 multitarget path the kernels take. Natively it must be the one CPUID predicts;
// under qemu (ctest's isa_* tests) CONVGRAD_EXPECT_ISA names the path the emulated CPU must
// take, and the rest of this binary's tests then check that path's results. A CPU without
// SSE4.1 (the "baseline" run) must get an error status instead.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test_util.h"

namespace convgrad::test {
namespace {

TEST(IsaPath, KernelsRunOnTheExpectedPath) {
    const char *env = std::getenv("CONVGRAD_EXPECT_ISA");
    const std::string expected = env ? env : expected_isa_path();
    EXPECT_EQ(expected_isa_path(), expected) << "CPUID reports a different CPU than the test expects";

    TfConv2D c;
    c.input = {1, 5, 5, 3};
    c.filter = {3, 3, 3, 2};
    c.padding = "SAME";
    ASSERT_TRUE(infer_out_backprop(c));
    Rng rng(9);
    const auto w = random_values(num_elements(c.filter), rng), dy = random_values(num_elements(c.out_backprop), rng);
    const TfRunResult r = run_tf(c, true, w, dy, false);
    if (expected == "baseline") {
        // SSE4.1 is the multitarget's floor (qemu64 lacks it): a clear refusal, no fault.
        EXPECT_EQ(r.status.code(), StatusCode::kUnsupported);
        EXPECT_NE(r.status.message().find("lacks SSE4.1"), std::string::npos) << r.status.message();
        EXPECT_EQ(last_isa_path(), "");
        return;
    }
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    EXPECT_LE(relative_error(r.result, backprop_input(c, w, dy)), 1e-5);
    EXPECT_EQ(last_isa_path(), expected);
}

}  // namespace
}  // namespace convgrad::test
