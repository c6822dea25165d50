// Dilated convolutions with unit strides as undilated ones over views of every d-th position
// (dilation_phases.cpp): execute.cpp runs them so where their kernel is a Winograd one.
#pragma once

#include <vector>

#include "canonical_view.h"
#include "convgrad/convgrad.h"

namespace convgrad {

// The three tensors of one call, as canonical views: a and b the inputs (dy and w for the
// data gradient, x and dy for the filter gradient), `result` written.
struct CallViews {
    CanonicalView a, b, result;
};

struct PhaseCall {
    ConvProblem problem;  // dilation 1
    CallViews views;      // views of the call's tensors
};

// The phases of `p` (unit strides, some dilation above 1; else none), those with work: for
// the data gradient each writes its own positions of dx; for the filter gradient each gives
// a whole dw, to be added (add_into).
std::vector<PhaseCall> dilation_phases(Direction d, const ConvProblem &p, const CallViews &v);

// A view of v's extents over `data` (v.num_elements() elements), its dims in the order of
// v's strides, compact: where a phase of a filter gradient writes its part.
CanonicalView like_compact(const CanonicalView &v, void *data);

// result += the sum of `parts` (views of result's extents; float32 and float64).
void add_into(const CanonicalView &result, const std::vector<CanonicalView> &parts);

}  // namespace convgrad
