// Attribute parsing shared by the frontends whose attributes have one entry per spatial axis
// (oneDNN Graph, ONNX). Messages name the attribute: "strides: must have 2 entries, got 3".
#pragma once

#include <string>
#include <vector>

#include "convgrad/problem.h"

namespace convgrad::attr {

// One entry per spatial axis, or empty for `fallback` on every axis; every entry >= `min`.
Result<SpatialDims> per_axis(const char *name, const std::vector<int64_t> &values, int rank, int64_t fallback,
                             int64_t min);

// A shape argument given either as the spatial sizes (rank entries) or in full (rank + 2).
// Returns the spatial part; `full` receives the whole shape when it was given in full.
Result<SpatialDims> spatial_or_full(const char *name, const Shape &values, int rank, const std::vector<int> &spatial_dims,
                                    Shape *full);

// `what` must have `dims` dimensions, none negative. `like` (optional) names the tensor that
// fixed the rank, for the message: "filter: must be 4-D like output_delta, got shape [...]".
Status check_shape(const char *what, const Shape &s, int dims, const char *like = nullptr);

// Prefixes a Status's message with the op name.
Status named(const char *op, const Status &s);

// Lower-cases ASCII.
std::string lower(std::string s);

}  // namespace convgrad::attr
