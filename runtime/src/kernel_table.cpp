// The dispatch table, generated from the build's kernel list (generators/CMakeLists.txt):
// per (direction, dtype), the depthwise kernel (groups contiguous: nxg), the channel-
// contiguous (nxc) one, the row-contiguous (ncx) one, then the stride-agnostic (any) one.
// The first entry that accepts a problem runs.
#include "kernel_registry.h"

#include "kernel_list.inc"  // the generated kernels' headers

namespace convgrad {
namespace {

using canonical::kC;
using canonical::kG;
using canonical::kX;
constexpr int kNone = -1;

constexpr Direction direction_bwd_data = Direction::kBackwardData;
constexpr Direction direction_bwd_weights = Direction::kBackwardWeights;
constexpr DType dtype_f32 = DType::kFloat32;
constexpr DType dtype_f64 = DType::kFloat64;
constexpr DType dtype_f16 = DType::kFloat16;
constexpr DType dtype_bf16 = DType::kBFloat16;
constexpr DType dtype_i32 = DType::kInt32;
constexpr int layout_nxg = kG;
constexpr int layout_nxc = kC;
constexpr int layout_ncx = kX;
constexpr int layout_any = kNone;

}  // namespace

const std::vector<KernelEntry> &kernel_table() {
    static const std::vector<KernelEntry> table = {
#define CONVGRAD_KERNEL(direction, dtype, layout)                                                       \
    {#direction "_" #dtype "_" #layout, direction_##direction, dtype_##dtype, layout_##layout,          \
     convgrad_##direction##_##dtype##_##layout},
#include "kernel_list.inc"
#undef CONVGRAD_KERNEL
    };
    return table;
}

const char *KernelEntry::layout() const {
    return unit_stride_dim == kC ? "nxc" : unit_stride_dim == kX ? "ncx" : unit_stride_dim == kG ? "nxg" : "any";
}

bool KernelEntry::accepts(Direction d, const ConvProblem &p, const CanonicalView &act0,
                          const CanonicalView &act1) const {
    if (d != direction || p.dtype != dtype) return false;
    if (unit_stride_dim == kNone) return true;
    // nxg kernels are built for one channel per group (they assert it): groups contiguous.
    if (unit_stride_dim == kG && (act0.extent[kC] != 1 || act1.extent[kC] != 1)) return false;
    return act0.stride[unit_stride_dim] == 1 && act1.stride[unit_stride_dim] == 1;
}

const KernelEntry *select_entry(Direction d, const ConvProblem &p, const CanonicalView &act0,
                                const CanonicalView &act1) {
    for (const KernelEntry &e : kernel_table()) {
        if (e.accepts(d, p, act0, act1)) return &e;
    }
    return nullptr;
}

}  // namespace convgrad
