// The dispatch table. Order is the dispatch priority: specialised kernels first, the
// stride-agnostic "any" kernel last. Kernel names: <direction>_<dtype>_<layout>, one per
// AOT variant built in generators/CMakeLists.txt.
#include "kernel_registry.h"

#include "convgrad_bwd_data_f32_any.h"
#include "convgrad_bwd_data_f32_ncx.h"
#include "convgrad_bwd_data_f32_nxc.h"
#include "convgrad_bwd_weights_f32_any.h"
#include "convgrad_bwd_weights_f32_ncx.h"
#include "convgrad_bwd_weights_f32_nxc.h"

namespace convgrad {
namespace {

using canonical::kC;
using canonical::kX;
constexpr int kNone = -1;
constexpr Direction kData = Direction::kBackwardData;
constexpr Direction kWeights = Direction::kBackwardWeights;

}  // namespace

const std::vector<KernelEntry> &kernel_table() {
    static const std::vector<KernelEntry> table = {
        // name                  direction dtype            contiguous  function
        {"bwd_data_f32_nxc",     kData,    DType::kFloat32, kC,         convgrad_bwd_data_f32_nxc},
        {"bwd_data_f32_ncx",     kData,    DType::kFloat32, kX,         convgrad_bwd_data_f32_ncx},
        {"bwd_data_f32_any",     kData,    DType::kFloat32, kNone,      convgrad_bwd_data_f32_any},
        {"bwd_weights_f32_nxc",  kWeights, DType::kFloat32, kC,         convgrad_bwd_weights_f32_nxc},
        {"bwd_weights_f32_ncx",  kWeights, DType::kFloat32, kX,         convgrad_bwd_weights_f32_ncx},
        {"bwd_weights_f32_any",  kWeights, DType::kFloat32, kNone,      convgrad_bwd_weights_f32_any},
    };
    return table;
}

const char *KernelEntry::layout() const {
    return unit_stride_dim == kC ? "nxc" : unit_stride_dim == kX ? "ncx" : "any";
}

bool KernelEntry::accepts(Direction d, const ConvProblem &p, const CanonicalView &act0,
                          const CanonicalView &act1) const {
    if (d != direction || p.dtype != dtype) return false;
    if (unit_stride_dim == kNone) return true;
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
