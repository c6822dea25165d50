// ONNX ConvTranspose attributes → ConvProblem (a data gradient).
#include "attr_parsing.h"
#include "convgrad/onnx.h"
#include "shape_inference.h"

namespace convgrad::onnx {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

Result<shape::OnnxAutoPad> parse_auto_pad(const std::string &s) {
    if (s == "NOTSET" || s.empty()) return shape::OnnxAutoPad::kNotSet;
    if (s == "SAME_UPPER") return shape::OnnxAutoPad::kSameUpper;
    if (s == "SAME_LOWER") return shape::OnnxAutoPad::kSameLower;
    if (s == "VALID") return shape::OnnxAutoPad::kValid;
    return Status::invalid("auto_pad: must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + s + "'");
}

Result<ConvProblem> conv_transpose_impl(const ConvTransposeAttrs &a, const Shape &x, const Shape &w, DType dtype) {
    const int rank = static_cast<int>(x.size()) - 2;
    if (rank < 1 || rank > 3) {
        return Status::invalid("X: must be 3-D, 4-D or 5-D (N, C and 1 to 3 spatial axes), got shape " + shape_string(x));
    }
    if (Status s = attr::check_shape("X", x, rank + 2); !s) return s;
    if (Status s = attr::check_shape("W", w, rank + 2, "X"); !s) return s;
    auto mode = parse_auto_pad(a.auto_pad);
    if (!mode.is_ok()) return mode.status;
    if (a.group < 1) return Status::invalid("group: must be >= 1, got " + str(a.group));
    if (w[0] != x[1]) {
        return Status::invalid("W: first dimension " + str(w[0]) + " must equal X's channels " + str(x[1]));
    }
    if (x[1] % a.group != 0 || x[1] == 0) {
        return Status::invalid("group: " + str(a.group) + " must divide X's channels " + str(x[1]));
    }
    auto strides = attr::per_axis("strides", a.strides, rank, 1, 1);
    if (!strides.is_ok()) return strides.status;
    auto dilations = attr::per_axis("dilations", a.dilations, rank, 1, 1);
    if (!dilations.is_ok()) return dilations.status;
    auto output_padding = attr::per_axis("output_padding", a.output_padding, rank, 0, 0);
    if (!output_padding.is_ok()) return output_padding.status;
    if (!a.kernel_shape.empty()) {
        auto k = attr::per_axis("kernel_shape", a.kernel_shape, rank, 1, 1);
        if (!k.is_ok()) return k.status;
        for (int i = 0; i < rank; i++) {
            if (k.value[i] != w[2 + i]) {
                return Status::invalid("kernel_shape: " + str(k.value[i]) + " differs from W's spatial size " +
                                       str(w[2 + i]));
            }
        }
    }
    SpatialDims pads_begin{0, 0, 0}, pads_end{0, 0, 0};
    if (!a.pads.empty()) {
        if (static_cast<int>(a.pads.size()) != 2 * rank) {
            return Status::invalid("pads: must have " + str(2 * rank) + " entries, got " + str(a.pads.size()));
        }
        for (int i = 0; i < rank; i++) {
            pads_begin[i] = a.pads[i], pads_end[i] = a.pads[rank + i];
            if (pads_begin[i] < 0 || pads_end[i] < 0) return Status::invalid("pads: entries must be >= 0");
        }
    }
    SpatialDims out_shape{-1, -1, -1};
    if (!a.output_shape.empty()) {
        std::vector<int> spatial;
        for (int i = 0; i < rank; i++) spatial.push_back(2 + i);
        Shape full;
        auto o = attr::spatial_or_full("output_shape", a.output_shape, rank, spatial, &full);
        if (!o.is_ok()) return o.status;
        out_shape = o.value;
    }

    ConvProblem p;
    p.spatial_rank = rank;
    p.dtype = dtype;
    p.activation_layout = ActivationLayout::kNCX;
    p.filter_layout = FilterLayout::kOIX;
    p.batch = x[0];
    p.groups = a.group;
    p.out_channels = x[1];                // the forward convolution's output = ConvTranspose's input
    p.in_channels = w[1] * a.group;       // ConvTranspose's output channels
    if (p.in_channels < 1) return Status::invalid("W: second dimension must be >= 1");
    for (int i = 0; i < rank; i++) {
        const int64_t op = output_padding.value[i], s = strides.value[i], d = dilations.value[i];
        if (op >= s && op >= d) {
            return Status::invalid("output_padding: " + str(op) + " must be less than the stride (" + str(s) +
                                   ") or the dilation (" + str(d) + ")");
        }
        const shape::TransposeWindow t = shape::onnx_transpose_window(mode.value, x[2 + i], w[2 + i], s, d, op,
                                                                      pads_begin[i], pads_end[i], out_shape[i]);
        if (t.input < 0) {
            return Status::invalid("pads: the output size along spatial axis " + str(i) + " would be " +
                                   str(t.input));
        }
        p.output_size[i] = x[2 + i];
        p.kernel_size[i] = w[2 + i];
        p.input_size[i] = t.input;
        p.strides[i] = s;
        p.dilations[i] = d;
        p.pads_begin[i] = t.pad_begin;
        p.pads_end[i] = shape::consistent_pad_end(t.input, x[2 + i], w[2 + i], s, d, t.pad_begin);
    }
    if (Status s = validate(p); !s) return s;
    return p;
}

}  // namespace

Result<ConvProblem> conv_transpose(const ConvTransposeAttrs &attrs, const Shape &x, const Shape &w, DType dtype) {
    auto r = conv_transpose_impl(attrs, x, w, dtype);
    if (!r.is_ok()) return attr::named("ConvTranspose", r.status);
    return r;
}

}  // namespace convgrad::onnx
