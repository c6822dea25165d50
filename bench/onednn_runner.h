// oneDNN 2.6's convolution_backward_data / _weights on the same problem as convgrad: either on
// the user's layout (the problem's own tensors, as TF hands them over) or on oneDNN's
// preferred layouts (format_tag::any; the reorders into them are done once, untimed).
#pragma once

#include <memory>
#include <string>

#include "convgrad/convgrad.h"

namespace convgrad::bench {

class OneDnnGradient {
public:
    // kUnsupported when oneDNN has no implementation (e.g. float64).
    static Result<std::shared_ptr<OneDnnGradient>> create(const ConvProblem &p, Direction d, bool own_layout);
    virtual ~OneDnnGradient() = default;
    virtual void execute() = 0;            // one run, waited for
    virtual std::string impl() const = 0;  // oneDNN's implementation name
};

std::string dnnl_version_string();  // e.g. "2.6.3"

}  // namespace convgrad::bench
