// TensorFlow attributes → ConvProblem. One resolver serves Conv2D*, Depthwise* and (with 5-D
// shapes) Conv3D*; they differ only in how the filter's channels are read.
#include <string>

#include "attr_parsing.h"
#include "convgrad/tf.h"
#include "shape_inference.h"

namespace convgrad::tf {
namespace {

enum class FilterKind { kConv, kDepthwise };

struct Layout {
    int rank = 2;        // spatial rank
    bool nchw = false;
    int batch_dim() const { return 0; }
    int channel_dim() const { return nchw ? 1 : rank + 1; }
    int spatial_dim(int a) const { return nchw ? 2 + a : 1 + a; }
};

std::string str(int64_t v) { return std::to_string(v); }

Result<Layout> parse_data_format(const std::string &format, int rank) {
    const std::string nxc = rank == 3 ? "NDHWC" : "NHWC", ncx = rank == 3 ? "NCDHW" : "NCHW";
    if (format.empty() || format == nxc) return Layout{rank, false};
    if (format == ncx) return Layout{rank, true};
    return Status::invalid("data_format: must be " + nxc + " or " + ncx + ", got '" + format + "'");
}

// strides / dilations: one entry per dimension, batch and channel entries 1, all >= 1.
Result<SpatialDims> parse_window_attr(const char *what, const std::vector<int64_t> &v, const Layout &l) {
    SpatialDims out{1, 1, 1};
    if (v.empty()) return out;
    const int dims = l.rank + 2;
    if (static_cast<int>(v.size()) != dims) {
        return Status::invalid(std::string(what) + ": must have " + str(dims) + " entries, got " + str(v.size()));
    }
    for (int64_t x : v) {
        if (x < 1) return Status::invalid(std::string(what) + ": every entry must be >= 1, got " + str(x));
    }
    if (v[l.batch_dim()] != 1 || v[l.channel_dim()] != 1) {
        return Status::invalid(std::string(what) + ": batch and channel entries must be 1");
    }
    for (int a = 0; a < l.rank; a++) out[a] = v[l.spatial_dim(a)];
    return out;
}

struct Padding {
    shape::TfPadding mode = shape::TfPadding::kValid;
    SpatialDims begin{0, 0, 0}, end{0, 0, 0};
};

Result<Padding> parse_padding(const ConvAttrs &attrs, const Layout &l) {
    Padding p;
    if (attrs.padding == "VALID") {
        p.mode = shape::TfPadding::kValid;
    } else if (attrs.padding == "SAME") {
        p.mode = shape::TfPadding::kSame;
    } else if (attrs.padding == "EXPLICIT" && l.rank == 2) {
        p.mode = shape::TfPadding::kExplicit;
    } else {
        return Status::invalid(std::string("padding: must be ") + (l.rank == 2 ? "SAME, VALID or EXPLICIT" : "SAME or VALID") +
                               ", got '" + attrs.padding + "'");
    }
    const auto &e = attrs.explicit_paddings;
    if (p.mode != shape::TfPadding::kExplicit) {
        if (!e.empty()) return Status::invalid("explicit_paddings: must be empty unless padding is EXPLICIT");
        return p;
    }
    const int dims = l.rank + 2;
    if (static_cast<int>(e.size()) != 2 * dims) {
        return Status::invalid("explicit_paddings: must have " + str(2 * dims) + " entries, got " + str(e.size()));
    }
    for (int64_t x : e) {
        if (x < 0) return Status::invalid("explicit_paddings: entries must be >= 0, got " + str(x));
    }
    for (int d : {l.batch_dim(), l.channel_dim()}) {
        if (e[2 * d] != 0 || e[2 * d + 1] != 0) {
            return Status::invalid("explicit_paddings: batch and channel entries must be 0");
        }
    }
    for (int a = 0; a < l.rank; a++) {
        p.begin[a] = e[2 * l.spatial_dim(a)];
        p.end[a] = e[2 * l.spatial_dim(a) + 1];
    }
    return p;
}

// The shared resolver. `input` is the full shape of x (data_format order).
// `rank` is the op's spatial rank (2 for Conv2D*, 3 for Conv3D*).
Result<ConvProblem> resolve(const char *op, int rank, FilterKind kind, const ConvAttrs &attrs, const Shape &input,
                            const char *input_arg, const Shape &filter, const char *filter_arg,
                            const Shape &out_backprop, DType dtype) {
    auto named = [op](const Status &s) { return Status(s.code(), std::string(op) + ": " + s.message()); };
    auto layout = parse_data_format(attrs.data_format, rank);
    if (!layout.is_ok()) return named(layout.status);
    const Layout l = layout.value;
    auto strides = parse_window_attr("strides", attrs.strides, l);
    if (!strides.is_ok()) return named(strides.status);
    auto dilations = parse_window_attr("dilations", attrs.dilations, l);
    if (!dilations.is_ok()) return named(dilations.status);
    auto padding = parse_padding(attrs, l);
    if (!padding.is_ok()) return named(padding.status);
    for (auto [what, s] : {std::pair{input_arg, &input}, {filter_arg, &filter}, {"out_backprop", &out_backprop}}) {
        if (Status st = attr::check_shape(what, *s, rank + 2); !st) return named(st);
    }

    ConvProblem p;
    p.spatial_rank = rank;
    p.dtype = dtype;
    p.activation_layout = l.nchw ? ActivationLayout::kNCX : ActivationLayout::kNXC;
    p.batch = input[l.batch_dim()];
    p.in_channels = input[l.channel_dim()];
    if (out_backprop[l.batch_dim()] != p.batch) {
        return named(Status::invalid("out_backprop: batch size " + str(out_backprop[l.batch_dim()]) +
                                     " does not match " + input_arg + " batch size " + str(p.batch)));
    }
    const int64_t f_in = filter[rank], f_out = filter[rank + 1];
    if (kind == FilterKind::kDepthwise) {
        if (f_in != p.in_channels) {
            return named(Status::invalid(std::string(filter_arg) + ": in-depth " + str(f_in) +
                                         " must equal the input depth " + str(p.in_channels)));
        }
        p.filter_layout = FilterLayout::kXGM;
        p.groups = p.in_channels;
        p.out_channels = f_in * f_out;
    } else {
        if (f_in < 1 || p.in_channels % f_in != 0) {
            return named(Status::invalid("input depth " + str(p.in_channels) + " must be a multiple of " +
                                         filter_arg + " in-depth " + str(f_in)));
        }
        p.filter_layout = FilterLayout::kXIO;
        p.groups = p.in_channels / f_in;
        p.out_channels = f_out;
        if (p.groups > 0 && f_out % p.groups != 0) {
            return named(Status::invalid(std::string(filter_arg) + ": out-depth " + str(f_out) +
                                         " must be a multiple of the number of groups " + str(p.groups)));
        }
    }
    if (p.in_channels < 1 || p.out_channels < 1) {
        return named(Status::invalid(std::string(input_arg) + ": channel counts must be >= 1"));
    }
    if (out_backprop[l.channel_dim()] != p.out_channels) {
        return named(Status::invalid("out_backprop: depth " + str(out_backprop[l.channel_dim()]) +
                                     " does not match the filter's output depth " + str(p.out_channels)));
    }
    for (int a = 0; a < rank; a++) {
        p.input_size[a] = input[l.spatial_dim(a)];
        p.kernel_size[a] = filter[a];
        p.strides[a] = strides.value[a];
        p.dilations[a] = dilations.value[a];
        if (p.kernel_size[a] < 1) {
            return named(Status::invalid(std::string(filter_arg) + ": spatial sizes must be >= 1, got shape " +
                                         shape_string(filter)));
        }
        auto w = shape::tf_window(p.input_size[a], p.kernel_size[a], p.strides[a], p.dilations[a],
                                  padding.value.mode, padding.value.begin[a], padding.value.end[a]);
        if (!w.is_ok()) return named(Status::invalid("spatial dim " + str(a) + ": " + w.status.message()));
        const int64_t got = out_backprop[l.spatial_dim(a)];
        if (got != w.value.output) {
            return named(Status::invalid("out_backprop: size of spatial dim " + str(a) + " is " + str(got) +
                                         ", doesn't match computed " + str(w.value.output) + " (input " +
                                         str(p.input_size[a]) + ", filter " + str(p.kernel_size[a]) +
                                         ", stride " + str(p.strides[a]) + ", dilation " +
                                         str(p.dilations[a]) + ")"));
        }
        p.output_size[a] = w.value.output;
        p.pads_begin[a] = w.value.pad_begin;
        p.pads_end[a] = w.value.pad_end;
    }
    if (Status s = validate(p); !s) return named(s);
    return p;
}

// input_sizes: the full shape, or (2-D) [H, W] with N from out_backprop and C from the filter.
Result<Shape> expand_input_sizes(const char *op, int rank, const ConvAttrs &attrs, const Shape &input_sizes,
                                 const Shape &filter, const Shape &out_backprop) {
    const int dims = rank + 2;
    if (static_cast<int>(input_sizes.size()) == dims) return input_sizes;
    if (rank != 2 || input_sizes.size() != 2 || filter.size() != 4 || out_backprop.size() != 4) {
        return Status::invalid(std::string(op) + ": input_sizes: must have " + str(dims) +
                               " entries (or 2 for [H, W]), got " + str(input_sizes.size()));
    }
    auto layout = parse_data_format(attrs.data_format, 2);
    if (!layout.is_ok()) return Status(layout.status.code(), std::string(op) + ": " + layout.status.message());
    const Layout l = layout.value;
    Shape full(4);
    full[l.batch_dim()] = out_backprop[l.batch_dim()];
    full[l.channel_dim()] = filter[2];
    full[l.spatial_dim(0)] = input_sizes[0];
    full[l.spatial_dim(1)] = input_sizes[1];
    return full;
}

Result<ConvProblem> backprop_input(const char *op, int rank, FilterKind kind, const ConvAttrs &attrs,
                                   const Shape &input_sizes, const Shape &filter, const Shape &out_backprop,
                                   DType dtype) {
    auto input = expand_input_sizes(op, rank, attrs, input_sizes, filter, out_backprop);
    if (!input.is_ok()) return input.status;
    return resolve(op, rank, kind, attrs, input.value, "input_sizes", filter, "filter", out_backprop, dtype);
}

}  // namespace

Result<ConvProblem> conv2d_backprop_input(const ConvAttrs &attrs, const Shape &input_sizes, const Shape &filter,
                                          const Shape &out_backprop, DType dtype) {
    return backprop_input("Conv2DBackpropInput", 2, FilterKind::kConv, attrs, input_sizes, filter, out_backprop,
                          dtype);
}

Result<ConvProblem> conv2d_backprop_filter(const ConvAttrs &attrs, const Shape &input, const Shape &filter_sizes,
                                           const Shape &out_backprop, DType dtype) {
    return resolve("Conv2DBackpropFilter", 2, FilterKind::kConv, attrs, input, "input", filter_sizes,
                   "filter_sizes", out_backprop, dtype);
}

Result<ConvProblem> depthwise_conv2d_backprop_input(const ConvAttrs &attrs, const Shape &input_sizes,
                                                    const Shape &filter, const Shape &out_backprop,
                                                    DType dtype) {
    return backprop_input("DepthwiseConv2dNativeBackpropInput", 2, FilterKind::kDepthwise, attrs, input_sizes,
                          filter, out_backprop, dtype);
}

Result<ConvProblem> depthwise_conv2d_backprop_filter(const ConvAttrs &attrs, const Shape &input,
                                                     const Shape &filter_sizes, const Shape &out_backprop,
                                                     DType dtype) {
    return resolve("DepthwiseConv2dNativeBackpropFilter", 2, FilterKind::kDepthwise, attrs, input, "input",
                   filter_sizes, "filter_sizes", out_backprop, dtype);
}

Result<ConvProblem> conv3d_backprop_input_v2(const ConvAttrs &attrs, const Shape &input_sizes, const Shape &filter,
                                             const Shape &out_backprop, DType dtype) {
    return backprop_input("Conv3DBackpropInputV2", 3, FilterKind::kConv, attrs, input_sizes, filter, out_backprop,
                          dtype);
}

Result<ConvProblem> conv3d_backprop_filter_v2(const ConvAttrs &attrs, const Shape &input, const Shape &filter_sizes,
                                              const Shape &out_backprop, DType dtype) {
    return resolve("Conv3DBackpropFilterV2", 3, FilterKind::kConv, attrs, input, "input", filter_sizes,
                   "filter_sizes", out_backprop, dtype);
}

}  // namespace convgrad::tf
