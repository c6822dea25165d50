// oneDNN Graph attributes → ConvProblem.
#include "attr_parsing.h"
#include "convgrad/onednn.h"
#include "shape_inference.h"

namespace convgrad::onednn {
namespace {

using attr::named;

std::string str(int64_t v) { return std::to_string(v); }

// Attributes resolved for a given spatial rank.
struct Common {
    int rank = 2;
    bool ncx = false, oix = false;
    shape::AutoPad auto_pad = shape::AutoPad::kNone;
    SpatialDims strides, dilations, pads_begin, pads_end;

    int channel_dim() const { return ncx ? 1 : rank + 1; }
    int spatial_dim(int a) const { return ncx ? 2 + a : 1 + a; }
    // Filter dims: XIO [X..., I, O], OIX [O, I, X...].
    int filter_i() const { return oix ? 1 : rank; }
    int filter_o() const { return oix ? 0 : rank + 1; }
    int filter_spatial(int a) const { return oix ? 2 + a : a; }
    std::vector<int> activation_spatial_dims() const {
        std::vector<int> d;
        for (int a = 0; a < rank; a++) d.push_back(spatial_dim(a));
        return d;
    }
    std::vector<int> filter_spatial_dims() const {
        std::vector<int> d;
        for (int a = 0; a < rank; a++) d.push_back(filter_spatial(a));
        return d;
    }
};

Result<Common> parse_common(const ConvAttrs &a, const Shape &output_delta) {
    Common c;
    c.rank = static_cast<int>(output_delta.size()) - 2;
    if (c.rank < 1 || c.rank > 3) {
        return Status::invalid("output_delta: must be 3-D, 4-D or 5-D (N, C and 1 to 3 spatial axes), got shape " +
                               shape_string(output_delta));
    }
    if (a.data_format == "NCX") c.ncx = true;
    else if (a.data_format != "NXC") return Status::invalid("data_format: must be NXC or NCX, got '" + a.data_format + "'");
    if (a.filter_format == "OIX") c.oix = true;
    else if (a.filter_format != "XIO") {
        return Status::invalid("filter_format: must be XIO or OIX, got '" + a.filter_format + "'");
    }
    const std::string pad = attr::lower(a.auto_pad);
    if (pad == "none" || pad.empty()) c.auto_pad = shape::AutoPad::kNone;
    else if (pad == "same_upper") c.auto_pad = shape::AutoPad::kSameUpper;
    else if (pad == "same_lower") c.auto_pad = shape::AutoPad::kSameLower;
    else if (pad == "valid") c.auto_pad = shape::AutoPad::kValid;
    else return Status::invalid("auto_pad: must be none, same_upper, same_lower or valid, got '" + a.auto_pad + "'");
    if (a.groups < 1) return Status::invalid("groups: must be >= 1, got " + str(a.groups));
    auto strides = attr::per_axis("strides", a.strides, c.rank, 1, 1);
    if (!strides.is_ok()) return strides.status;
    auto dilations = attr::per_axis("dilations", a.dilations, c.rank, 1, 1);
    if (!dilations.is_ok()) return dilations.status;
    auto pb = attr::per_axis("pads_begin", a.pads_begin, c.rank, 0, 0);
    if (!pb.is_ok()) return pb.status;
    auto pe = attr::per_axis("pads_end", a.pads_end, c.rank, 0, 0);
    if (!pe.is_ok()) return pe.status;
    c.strides = strides.value, c.dilations = dilations.value, c.pads_begin = pb.value, c.pads_end = pe.value;
    return c;
}

// Every tensor has the rank output_delta fixed: N, C and `rank` spatial axes.
Status check_rank(const char *what, const Shape &s, int rank) {
    return attr::check_shape(what, s, rank + 2, "output_delta");
}

// Fills pads for input size I (auto_pad), then checks that output_delta has the size the
// forward convolution of I would produce, with output_padding extra trailing rows in I.
Status resolve_axis(const Common &c, int a, const SpatialDims &output_padding, ConvProblem &p) {
    if (c.auto_pad != shape::AutoPad::kNone) {
        const shape::Window w = shape::onednn_auto_pad(c.auto_pad, p.input_size[a], p.kernel_size[a],
                                                       c.strides[a], c.dilations[a]);
        p.pads_begin[a] = w.pad_begin;
        p.pads_end[a] = w.pad_end;
    }
    p.pads_end[a] -= output_padding[a];
    const int64_t expect = shape::canonical_output_size(p.input_size[a], p.kernel_size[a], p.strides[a],
                                                        p.dilations[a], p.pads_begin[a], p.pads_end[a]);
    if (expect != p.output_size[a]) {
        return Status::invalid("output_delta: spatial dim " + str(a) + " is " + str(p.output_size[a]) +
                               ", but a convolution of input size " + str(p.input_size[a]) + " (kernel " +
                               str(p.kernel_size[a]) + ", stride " + str(p.strides[a]) + ", dilation " +
                               str(p.dilations[a]) + ", pads " + str(p.pads_begin[a]) + "/" +
                               str(p.pads_end[a] + output_padding[a]) + ") gives " + str(expect));
    }
    return Status::ok();
}

Status check_groups(const ConvProblem &p) {
    if (p.out_channels % p.groups != 0 || p.in_channels % p.groups != 0 || p.in_channels == 0) {
        return Status::invalid("groups: " + str(p.groups) + " must divide the input channels (" + str(p.in_channels) +
                               ") and the output channels (" + str(p.out_channels) + ")");
    }
    return Status::ok();
}

ConvProblem base_problem(const Common &c, DType dtype) {
    ConvProblem p;
    p.spatial_rank = c.rank;
    p.dtype = dtype;
    p.activation_layout = c.ncx ? ActivationLayout::kNCX : ActivationLayout::kNXC;
    p.filter_layout = c.oix ? FilterLayout::kOIX : FilterLayout::kXIO;
    p.strides = c.strides, p.dilations = c.dilations, p.pads_begin = c.pads_begin, p.pads_end = c.pads_end;
    return p;
}

Result<ConvProblem> data_impl(const ConvAttrs &a, const Shape &dy, const Shape &filter, const Shape &output_shape,
                              DType dtype) {
    auto common = parse_common(a, dy);
    if (!common.is_ok()) return common.status;
    const Common &c = common.value;
    if (Status s = check_rank("output_delta", dy, c.rank); !s) return s;
    if (Status s = check_rank("filter", filter, c.rank); !s) return s;
    auto op = attr::per_axis("output_padding", a.output_padding, c.rank, 0, 0);
    if (!op.is_ok()) return op.status;

    ConvProblem p = base_problem(c, dtype);
    p.groups = a.groups;
    p.batch = dy[0];
    p.out_channels = dy[c.channel_dim()];
    if (filter[c.filter_o()] != p.out_channels) {
        return Status::invalid("filter: output channels " + str(filter[c.filter_o()]) +
                               " do not match output_delta's " + str(p.out_channels));
    }
    p.in_channels = filter[c.filter_i()] * a.groups;
    for (int a_ = 0; a_ < c.rank; a_++) {
        p.kernel_size[a_] = filter[c.filter_spatial(a_)];
        p.output_size[a_] = dy[c.spatial_dim(a_)];
    }
    Shape full;
    if (!output_shape.empty()) {
        auto given = attr::spatial_or_full("output_shape", output_shape, c.rank, c.activation_spatial_dims(), &full);
        if (!given.is_ok()) return given.status;
        p.input_size = given.value;
        if (!full.empty() && (full[0] != p.batch || full[c.channel_dim()] != p.in_channels)) {
            return Status::invalid("output_shape: " + shape_string(full) + " disagrees with the batch " + str(p.batch) +
                                   " and input channels " + str(p.in_channels) + " implied by output_delta and filter");
        }
    }
    for (int a_ = 0; a_ < c.rank; a_++) {
        if (!output_shape.empty()) continue;
        // Not given (oneDNN requires it; we infer it as ConvTranspose would).
        const int64_t ke = (p.kernel_size[a_] - 1) * p.dilations[a_] + 1;
        p.input_size[a_] = c.auto_pad == shape::AutoPad::kSameUpper || c.auto_pad == shape::AutoPad::kSameLower
                               ? p.output_size[a_] * p.strides[a_]
                               : p.strides[a_] * (p.output_size[a_] - 1) + ke - (c.auto_pad == shape::AutoPad::kValid
                                     ? 0 : p.pads_begin[a_] + p.pads_end[a_]) + op.value[a_];
        if (p.input_size[a_] < 0) {
            return Status::invalid("output_shape: inferred spatial size " + str(p.input_size[a_]) + " is negative");
        }
    }
    if (Status s = check_groups(p); !s) return s;
    if (c.auto_pad == shape::AutoPad::kValid) p.pads_begin = p.pads_end = SpatialDims{0, 0, 0};
    for (int a_ = 0; a_ < c.rank; a_++) {
        if (Status s = resolve_axis(c, a_, op.value, p); !s) return s;
    }
    if (Status s = validate(p); !s) return s;
    return p;
}

Result<ConvProblem> filters_impl(const ConvAttrs &a, const Shape &x, const Shape &dy, const Shape &filters_shape,
                                 DType dtype) {
    auto common = parse_common(a, dy);
    if (!common.is_ok()) return common.status;
    const Common &c = common.value;
    if (Status s = check_rank("output_delta", dy, c.rank); !s) return s;
    if (Status s = check_rank("input", x, c.rank); !s) return s;
    if (!a.output_padding.empty()) return Status::invalid("output_padding: only the data op takes it");

    ConvProblem p = base_problem(c, dtype);
    p.groups = a.groups;
    p.batch = x[0];
    p.in_channels = x[c.channel_dim()];
    p.out_channels = dy[c.channel_dim()];
    if (dy[0] != p.batch) {
        return Status::invalid("output_delta: batch " + str(dy[0]) + " does not match input's " + str(p.batch));
    }
    Shape full;
    auto k = attr::spatial_or_full("filters_shape", filters_shape, c.rank, c.filter_spatial_dims(), &full);
    if (!k.is_ok()) return k.status;
    if (!full.empty() && (full[c.filter_o()] != p.out_channels || full[c.filter_i()] * a.groups != p.in_channels)) {
        return Status::invalid("filters_shape: " + shape_string(full) + " disagrees with input channels " +
                               str(p.in_channels) + ", output_delta channels " + str(p.out_channels) + " and groups " +
                               str(a.groups));
    }
    for (int a_ = 0; a_ < c.rank; a_++) {
        p.kernel_size[a_] = k.value[a_];
        p.input_size[a_] = x[c.spatial_dim(a_)];
        p.output_size[a_] = dy[c.spatial_dim(a_)];
    }
    if (Status s = check_groups(p); !s) return s;
    if (c.auto_pad == shape::AutoPad::kValid) p.pads_begin = p.pads_end = SpatialDims{0, 0, 0};
    const SpatialDims no_output_padding{0, 0, 0};
    for (int a_ = 0; a_ < c.rank; a_++) {
        if (Status s = resolve_axis(c, a_, no_output_padding, p); !s) return s;
    }
    if (Status s = validate(p); !s) return s;
    return p;
}

}  // namespace

Result<ConvProblem> convolution_backprop_data(const ConvAttrs &attrs, const Shape &output_delta, const Shape &filter,
                                              const Shape &output_shape, DType dtype) {
    auto r = data_impl(attrs, output_delta, filter, output_shape, dtype);
    if (!r.is_ok()) return named("ConvolutionBackpropData", r.status);
    return r;
}

Result<ConvProblem> convolution_backprop_filters(const ConvAttrs &attrs, const Shape &input,
                                                 const Shape &output_delta, const Shape &filters_shape, DType dtype) {
    auto r = filters_impl(attrs, input, output_delta, filters_shape, dtype);
    if (!r.is_ok()) return named("ConvolutionBackpropFilters", r.status);
    return r;
}

}  // namespace convgrad::onednn
