// oneDNN benchdnn convolution descriptors ("g1mb8ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0n\"name\"")
// and how they map onto convgrad problems. Dilation is 0-based as in benchdnn (d = dh + 1).
#pragma once

#include <string>
#include <vector>

#include "convgrad/convgrad.h"

namespace convgrad::bench {

struct BenchProblem {
    std::string name, line;
    int rank = 2;                       // spatial rank: 3 with any 'd' field, 1 without 'h' fields
    int64_t g = 1, mb = 2, ic = 1, oc = 1;
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};  // D, H, W (outermost first)
    int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {0, 0, 0};

    // "dense", "strided", "dilated", "grouped", "depthwise" or "3d" (first that applies,
    // from the right).
    std::string problem_class() const;
    double flops() const;  // 2 * multiply-adds of one gradient
};

Result<BenchProblem> parse_descriptor(const std::string &line);
// One descriptor per line; '#' starts a comment.
Result<std::vector<BenchProblem>> parse_batch(const std::string &path);

// The problem in the user's layout: NXC activations with XIO (HWIO) weights as TF hands them
// over, or NCX with OIX weights.
ConvProblem to_problem(const BenchProblem &b, bool nchw, DType dtype);

}  // namespace convgrad::bench
