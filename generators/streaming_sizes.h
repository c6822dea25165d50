// Sizes the generators and the runtime's registry share (plain C++, as canonical.h).
#pragma once

#include <cstdint>

namespace convgrad {

// dy from this size on streams from memory, within a call and between calls: larger than a
// core's share of the L3 lets it stay. There the registry takes the staged-dy depthwise
// variant (runtime/src/kernel_registry.h, kStagedDyMinBytes) and the dense filter gradient's
// tiles prefetch it (generators/next_tile_prefetch.h).
constexpr int64_t kStreamingDyMinBytes = int64_t(8) << 20;

}  // namespace convgrad
