// Randomised property tests: arbitrary valid attribute combinations of the four TF ops, in
// both layouts, against the float64 reference (relative error <= 1e-5, the float32 contract).
// Gapped (non-contiguous) tensors route some cases to the stride-agnostic kernels, and each
// op's test checks that every layout kernel of its direction ran.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "test_util.h"

namespace convgrad::test {
namespace {

int case_count() {
    const char *env = std::getenv("CONVGRAD_TEST_CASES");  // fewer under qemu
    return env ? std::atoi(env) : 300;
}

int64_t pick(Rng &rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

TfConv2D random_case(Rng &rng, bool depthwise) {
    while (true) {
        TfConv2D c;
        c.depthwise = depthwise;
        c.data_format = pick(rng, 0, 1) ? "NCHW" : "NHWC";
        const bool nchw = c.data_format == "NCHW";
        // Sizes: small (scalar branches), wide (full vectors), very wide (the register-tiled
        // branches: >= 32 channels per tile on AVX-512, with tails off the tile multiples).
        const int size = static_cast<int>(pick(rng, 0, 7));
        const bool wide = size >= 4, very_wide = size >= 6;
        const int64_t n = pick(rng, 1, very_wide ? 2 : 3), h = pick(rng, 1, wide && !very_wide ? 20 : 10),
                      w = pick(rng, 1, wide ? 20 : 10);
        int64_t cin;
        if (depthwise) {
            cin = very_wide ? pick(rng, 16, 80) : pick(rng, 1, wide ? 20 : 5);
            c.filter = {pick(rng, 1, 4), pick(rng, 1, 4), cin, very_wide ? 1 : pick(rng, 1, 3)};
        } else {
            const int64_t groups = std::vector<int64_t>{1, 1, 2, 3}[pick(rng, 0, 3)];
            const int64_t cg = very_wide ? pick(rng, 3, 72) : pick(rng, 1, wide ? 24 : 5);
            const int64_t kg = very_wide ? pick(rng, 8, 72) : pick(rng, 1, wide ? 24 : 5);
            cin = groups * cg;
            c.filter = {pick(rng, 1, 4), pick(rng, 1, 4), cg, groups * kg};
        }
        c.input = nchw ? std::vector<int64_t>{n, cin, h, w} : std::vector<int64_t>{n, h, w, cin};
        const int hd = nchw ? 2 : 1, wd = nchw ? 3 : 2;
        c.strides = {1, 1, 1, 1};
        c.dilations = {1, 1, 1, 1};
        c.strides[hd] = pick(rng, 1, 3), c.strides[wd] = pick(rng, 1, 3);
        c.dilations[hd] = pick(rng, 1, 3), c.dilations[wd] = pick(rng, 1, 3);
        c.padding = std::vector<std::string>{"SAME", "VALID", "EXPLICIT"}[pick(rng, 0, 2)];
        if (c.padding == "EXPLICIT") {
            c.explicit_paddings.assign(8, 0);
            for (int d : {hd, wd}) c.explicit_paddings[2 * d] = pick(rng, 0, 3), c.explicit_paddings[2 * d + 1] = pick(rng, 0, 3);
        }
        if (infer_out_backprop(c)) return c;
    }
}

void check_random_op(bool depthwise, bool backprop_input, uint64_t seed) {
    Rng rng(seed);
    std::set<std::string> kernels;
    const int cases = case_count();
    for (int i = 0; i < cases; i++) {
        TfConv2D c = random_case(rng, depthwise);
        const bool gapped = pick(rng, 0, 4) == 0;
        SCOPED_TRACE("case " + std::to_string(i) + " seed " + std::to_string(seed) + (gapped ? " gapped " : " ") +
                     describe(c));
        const auto x = random_values(num_elements(c.input), rng);
        const auto w = random_values(num_elements(c.filter), rng);
        const auto dy = random_values(num_elements(c.out_backprop), rng);
        const auto ref = backprop_input ? test::backprop_input(c, w, dy) : backprop_filter(c, x, dy);
        const TfRunResult r = run_tf(c, backprop_input, backprop_input ? w : x, dy, gapped);
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        ASSERT_LE(relative_error(r.result, ref), 1e-5) << "kernel " << r.kernel;
        kernels.insert(r.kernel);
    }
    if (cases >= 100) {  // enough cases that every layout variant must have been drawn
        const std::string dir = backprop_input ? "bwd_data_f32_" : "bwd_weights_f32_";
        std::vector<const char *> layouts = {"nxc", "ncx", "any"};
        if (depthwise) {  // multiplier 1: one channel per group
            layouts.push_back("nxg");  // NHWC: groups contiguous
            layouts.push_back("ncg");  // NCHW: rows contiguous
        }
        if (backprop_input) {  // stride 2 along x, even width: the x-phase kernels
            layouts.push_back(depthwise ? "nxg_s2" : "nxc_s2");
        }
        // At most 16 dy channels per group: the small-group kernel. Depthwise multipliers here
        // are at most 3, so their NHWC data gradients with several channels per group take it
        // instead of nxc.
        if (backprop_input) layouts.push_back("nxc_sg");
        if (backprop_input && depthwise) layouts.erase(layouts.begin());  // nxc
        for (const char *layout : layouts) {
            EXPECT_TRUE(kernels.count(kernel_on_this_path(dir + layout))) << kernel_on_this_path(dir + layout) << " never ran";
        }
    }
}

TEST(TfRandom, Conv2DBackpropInput) { check_random_op(false, true, 1001); }
TEST(TfRandom, Conv2DBackpropFilter) { check_random_op(false, false, 2002); }
TEST(TfRandom, DepthwiseConv2dNativeBackpropInput) { check_random_op(true, true, 3003); }
TEST(TfRandom, DepthwiseConv2dNativeBackpropFilter) { check_random_op(true, false, 4004); }

}  // namespace
}  // namespace convgrad::test
