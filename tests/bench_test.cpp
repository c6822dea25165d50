// The benchmark's descriptor parser and its mapping to problems; `convgrad bench` itself runs
// in the CLI tests.
#include <gtest/gtest.h>

#include "benchdnn_desc.h"

namespace convgrad::bench {
namespace {

TEST(BenchDescriptor, ParsesFieldsAndClasses) {
    auto b = parse_descriptor("g1mb8ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0n\"rn50_3x3_56\"");
    ASSERT_TRUE(b.is_ok()) << b.status.message();
    EXPECT_EQ(b.value.name, "rn50_3x3_56");
    EXPECT_EQ(b.value.rank, 2);
    EXPECT_EQ(b.value.mb, 8);
    EXPECT_EQ(b.value.in[1], 56);
    EXPECT_EQ(b.value.k[2], 3);
    EXPECT_EQ(b.value.problem_class(), "dense");
    EXPECT_DOUBLE_EQ(b.value.flops(), 2.0 * 8 * 64 * 64 * 56 * 56 * 9);  // 1.85 GFLOP, as the issue says
    EXPECT_EQ(parse_descriptor("g32mb8ic32ih112oc32kh3ph1n\"dw\"").value.problem_class(), "depthwise");
    EXPECT_EQ(parse_descriptor("g32mb8ic256ih28oc256kh3ph1").value.problem_class(), "grouped");
    EXPECT_EQ(parse_descriptor("mb4ic256ih33oc256kh3ph2dh1").value.problem_class(), "dilated");
    EXPECT_EQ(parse_descriptor("mb8ic128ih56oc128kh3sh2ph1").value.problem_class(), "strided");
    EXPECT_EQ(parse_descriptor("mb2ic32id32ih32iw32oc32kd3kh3kw3pd1ph1pw1").value.problem_class(), "3d");
}

// benchdnn's defaults: square sizes from h, stride 1, no padding, output computed.
TEST(BenchDescriptor, Defaults) {
    auto b = parse_descriptor("ic4ih10oc6kh3sh2");
    ASSERT_TRUE(b.is_ok()) << b.status.message();
    EXPECT_EQ(b.value.mb, 2);
    EXPECT_EQ(b.value.in[2], 10);  // iw = ih
    EXPECT_EQ(b.value.k[2], 3);    // kw = kh
    EXPECT_EQ(b.value.s[2], 2);    // sw = sh
    EXPECT_EQ(b.value.out[1], 4);  // (10 - 3) / 2 + 1
    EXPECT_EQ(b.value.out[2], 4);
}

TEST(BenchDescriptor, RejectsMalformed) {
    EXPECT_NE(parse_descriptor("mb8ih56oc64kh3").status.message().find("needs ic and oc"), std::string::npos);
    EXPECT_NE(parse_descriptor("mb8ic64ih56oc64kh3xx2").status.message().find("unknown field 'xx'"), std::string::npos);
    EXPECT_NE(parse_descriptor("g3mb8ic64ih56oc64kh3").status.message().find("g must divide"), std::string::npos);
    EXPECT_NE(parse_descriptor("ic4ih2oc4kh5").status.message().find("empty output"), std::string::npos);
    EXPECT_FALSE(parse_descriptor("ic4ih8oc4kh3n\"open").is_ok());
    EXPECT_FALSE(parse_batch("/nonexistent.conv").is_ok());
}

// Every problem of the project's suite parses and maps to a valid problem in both layouts.
TEST(BenchDescriptor, SuiteMapsToValidProblems) {
    auto suite = parse_batch(CONVGRAD_SUITE);
    ASSERT_TRUE(suite.is_ok()) << suite.status.message();
    EXPECT_EQ(suite.value.size(), 15u);
    for (const BenchProblem &b : suite.value) {
        for (bool nchw : {false, true}) {
            const ConvProblem p = to_problem(b, nchw, DType::kFloat32);
            EXPECT_TRUE(validate(p).is_ok()) << b.name << ": " << validate(p).message();
            EXPECT_DOUBLE_EQ(2 * multiply_adds(p), b.flops()) << b.name;
        }
    }
}

}  // namespace
}  // namespace convgrad::bench
