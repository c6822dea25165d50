// oneDNN 2.6's convolution_backward_data / _weights on the same problem as convgrad: either on
// the user's layout (the problem's own tensors, as TF hands them over) or on oneDNN's
// preferred layouts (format_tag::any; the reorders into them are done once, untimed).
// The algorithm is convolution_direct, what TensorFlow and PyTorch ask oneDNN for, or
// convolution_winograd (own layouts; oneDNN has it for 3x3 stride-1 f32 layers on AVX-512):
// fewer multiplies, the fastest oneDNN there is on those layers.
#pragma once

#include <memory>
#include <string>

#include "convgrad/convgrad.h"

namespace convgrad::bench {

enum class OneDnnAlgorithm { kDirect, kWinograd };

// What the benches time beside convgrad, in this order (`convgrad bench`'s columns, the
// Google Benchmark binary's names): direct on the user's and on oneDNN's own layouts, then
// Winograd where oneDNN has one.
struct OneDnnVariant {
    const char *name;
    bool own_layout;
    OneDnnAlgorithm algorithm;
};
inline constexpr OneDnnVariant kOneDnnVariants[] = {{"user", false, OneDnnAlgorithm::kDirect},
                                                   {"own", true, OneDnnAlgorithm::kDirect},
                                                   {"winograd", true, OneDnnAlgorithm::kWinograd}};

class OneDnnGradient {
public:
    // kUnsupported when oneDNN has no implementation (e.g. float64, or Winograd on a strided
    // layer). kWinograd always runs on oneDNN's own layouts.
    static Result<std::shared_ptr<OneDnnGradient>> create(const ConvProblem &p, Direction d, bool own_layout,
                                                          OneDnnAlgorithm algorithm = OneDnnAlgorithm::kDirect);
    virtual ~OneDnnGradient() = default;
    virtual void execute() = 0;            // one run, waited for
    virtual std::string impl() const = 0;  // oneDNN's implementation name
};

std::string dnnl_version_string();  // e.g. "2.6.3"

}  // namespace convgrad::bench
