// Canonical validation and the shapes of a ConvProblem's tensors.
#include <limits>
#include <string>

#include "convgrad/problem.h"
#include "shape_inference.h"

namespace convgrad {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

std::string axis(int a) { return "[" + std::to_string(a) + "]"; }

Status check_int32(const char *what, const Shape &shape) {
    // Halide indexes buffers with 32-bit extents, strides and offsets.
    double elements = 1;
    for (int64_t d : shape) elements *= static_cast<double>(d);
    if (elements > static_cast<double>(kInt32Max)) {
        return Status::unsupported(std::string(what) + ": " + shape_string(shape) +
                                   " has more than 2^31-1 elements (32-bit indexing)");
    }
    return Status::ok();
}

}  // namespace

Status validate(const ConvProblem &p) {
    if (p.spatial_rank < 1 || p.spatial_rank > 3) {
        return Status::invalid("spatial_rank: must be 1, 2 or 3, got " + std::to_string(p.spatial_rank));
    }
    if (p.batch < 0) return Status::invalid("batch: must be >= 0");
    if (p.groups < 1) return Status::invalid("groups: must be >= 1, got " + std::to_string(p.groups));
    if (p.in_channels < 1 || p.in_channels % p.groups != 0) {
        return Status::invalid("in_channels: must be a positive multiple of groups (" +
                               std::to_string(p.groups) + "), got " + std::to_string(p.in_channels));
    }
    if (p.out_channels < 1 || p.out_channels % p.groups != 0) {
        return Status::invalid("out_channels: must be a positive multiple of groups (" +
                               std::to_string(p.groups) + "), got " + std::to_string(p.out_channels));
    }
    if (p.filter_layout == FilterLayout::kXGM && p.in_channels != p.groups) {
        return Status::invalid("filter_layout: XGM (depthwise) needs in_channels == groups");
    }
    for (int a = 0; a < p.spatial_rank; a++) {
        if (p.input_size[a] < 0) return Status::invalid("input_size" + axis(a) + ": must be >= 0");
        if (p.output_size[a] < 0) return Status::invalid("output_size" + axis(a) + ": must be >= 0");
        if (p.kernel_size[a] < 1) return Status::invalid("kernel_size" + axis(a) + ": must be >= 1");
        if (p.strides[a] < 1) return Status::invalid("strides" + axis(a) + ": must be >= 1");
        if (p.dilations[a] < 1) return Status::invalid("dilations" + axis(a) + ": must be >= 1");
        for (int64_t v : {p.kernel_size[a], p.strides[a], p.dilations[a], p.pads_begin[a], p.pads_end[a]}) {
            if (v > kInt32Max || v < -kInt32Max) {
                return Status::unsupported("attribute" + axis(a) + ": value " + std::to_string(v) +
                                           " does not fit in 32 bits");
            }
        }
        const int64_t expect = shape::canonical_output_size(p.input_size[a], p.kernel_size[a], p.strides[a],
                                                            p.dilations[a], p.pads_begin[a], p.pads_end[a]);
        if (p.output_size[a] != expect) {
            return Status::invalid("output_size" + axis(a) + ": " + std::to_string(p.output_size[a]) +
                                   " does not match the " + std::to_string(expect) +
                                   " implied by input size, kernel, stride, dilation and pads");
        }
    }
    for (auto [what, shape] : {std::pair{"input", input_shape(p)}, {"output", output_shape(p)},
                               {"filter", filter_shape(p)}}) {
        if (Status s = check_int32(what, shape); !s) return s;
    }
    return Status::ok();
}

namespace {

Shape activation_shape(const ConvProblem &p, const SpatialDims &spatial, int64_t channels) {
    Shape s{p.batch};
    if (p.activation_layout == ActivationLayout::kNCX) s.push_back(channels);
    for (int a = 0; a < p.spatial_rank; a++) s.push_back(spatial[a]);
    if (p.activation_layout == ActivationLayout::kNXC) s.push_back(channels);
    return s;
}

}  // namespace

Shape input_shape(const ConvProblem &p) { return activation_shape(p, p.input_size, p.in_channels); }
Shape output_shape(const ConvProblem &p) { return activation_shape(p, p.output_size, p.out_channels); }

Shape filter_shape(const ConvProblem &p) {
    const int64_t groups = p.groups > 0 ? p.groups : 1;
    Shape s;
    if (p.filter_layout == FilterLayout::kOIX) s = {p.out_channels, p.in_channels / groups};
    for (int a = 0; a < p.spatial_rank; a++) s.push_back(p.kernel_size[a]);
    if (p.filter_layout == FilterLayout::kXIO) s.insert(s.end(), {p.in_channels / groups, p.out_channels});
    if (p.filter_layout == FilterLayout::kXGM) s.insert(s.end(), {groups, p.out_channels / groups});
    return s;
}

double multiply_adds(const ConvProblem &p) {
    double m = static_cast<double>(p.batch) * static_cast<double>(p.out_channels) *
               static_cast<double>(p.in_channels / (p.groups > 0 ? p.groups : 1));
    for (int a = 0; a < p.spatial_rank; a++) m *= static_cast<double>(p.output_size[a] * p.kernel_size[a]);
    return m;
}

}  // namespace convgrad
