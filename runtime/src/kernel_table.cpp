// The dispatch table, generated from the build's kernel list (generators/CMakeLists.txt): per
// (direction, dtype), the data gradient's stride-2 kernels (nxg_s2, ncg_s2_px, nxc_s2_px,
// ncx_s2_px, nxc_s2), the depthwise kernels (one channel per group: the filter gradient's
// nxg_gt for small planes, nxg_xp for x read in place, nxg_sd for large dy, the data
// gradient's nxg_ip for 3x3 filters with dy read in place, nxg with groups
// contiguous, ncg_fp for flat planes, and ncg, with rows contiguous), the
// channel-contiguous ones (nxc_px for few channels, nxc_pw for pointwise layers, nxc_sg for
// small groups, nxc_cs for whole slabs of channels, nxc_wr for the filter gradient's few
// positions, nxc_xp for its few products per element of a large x, nxc), the row-contiguous ones (ncx_px_pw for pointwise
// data gradients, ncx_px for rows of pixel vectors, ncx_cs, ncx_sg for the filter gradient's
// small groups, ncx_db for pointwise filter gradients, ncx_xp, ncx), then the stride-agnostic (any) one; then the GPU kernels. The first
// entry that accepts a problem runs.
#include <algorithm>
#include <atomic>

#include "halide_bridge.h"
#include "kernel_registry.h"

#include "kernel_list.inc"  // the generated kernels' headers

namespace convgrad {
namespace {

using canonical::kC;
using canonical::kG;
using canonical::kX;
constexpr int kNone = -1;

// The filter's taps along the first `axes` spatial axes (outermost first, x last): every
// tap with p.spatial_rank, the taps off the x axis (a tile's rows of them) with one fewer.
int64_t taps_along(const ConvProblem &p, int axes) {
    int64_t taps = 1;
    for (int a = 0; a < axes; a++) taps *= p.kernel_size[a];
    return taps;
}

constexpr Direction direction_bwd_data = Direction::kBackwardData;
constexpr Direction direction_bwd_weights = Direction::kBackwardWeights;
constexpr DType dtype_f32 = DType::kFloat32;
constexpr DType dtype_f64 = DType::kFloat64;
constexpr DType dtype_f16 = DType::kFloat16;
constexpr DType dtype_bf16 = DType::kBFloat16;
constexpr DType dtype_i32 = DType::kInt32;
constexpr LayoutRequirement layout_nxg_s2 = {kG, true, true};
constexpr LayoutRequirement layout_ncg_s2_px = {kX, true, true, true};
constexpr LayoutRequirement layout_ncx_s2_px = {kX, false, true, true};
constexpr LayoutRequirement layout_nxc_s2 = {kC, false, true};
constexpr LayoutRequirement layout_nxc_s2_px = {kC, false, true, true};
constexpr LayoutRequirement layout_nxc_px = {kC, false, false, true};
constexpr LayoutRequirement layout_nxc_wg = {kC, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxc_sg = {kC, false, false, false, true};
constexpr LayoutRequirement layout_nxc_cs = {kC, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxc_pw = {kC, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_ncx_px_pw = {kX, false, false, true, false, false, false, false, true};
// (Any pixel stride: the dilation phases of NCX views take every other pixel.)
constexpr LayoutRequirement layout_ncx_wg = {kNone, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_ncx_cs = {kX, false, false, false, false, false, true};
constexpr LayoutRequirement layout_ncx_sg = {kX, false, false, false, true};
constexpr LayoutRequirement layout_ncx_db = {kX, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxg_sd = {kG, true, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxc_xp = {kC, false, false, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxc_wr = {kC, false, false, false, false, false, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_ncx_xp = {kX, false, false, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxg_gt = {kG, true, false, false, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxg_xp = {kG, true, false, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxg_ip = {kG, true, false, false, false, false, false, false, false, false, false, false, false, true};
constexpr LayoutRequirement layout_nxg = {kG, true};
constexpr LayoutRequirement layout_ncg_fp = {kX, true, false, false, false, true};
constexpr LayoutRequirement layout_ncg = {kX, true};
constexpr LayoutRequirement layout_nxc = {kC, false};
constexpr LayoutRequirement layout_ncx_px = {kX, false, false, true};
constexpr LayoutRequirement layout_ncx = {kX, false};
constexpr LayoutRequirement layout_any = {kNone, false};
constexpr bool floor_every_path = false;
constexpr bool floor_from_avx2 = true;
constexpr Device device_cuda = Device::kCuda;
constexpr Device device_opencl = Device::kOpenCL;

// Whether a view's channels per group are whole slabs of kChannelSlab: what the channel-slab
// kernels (nxc_cs, ncx_cs) need of dx, and Winograd of both activations.
bool whole_channel_slabs(const CanonicalView &v) { return v.extent[kC] % kChannelSlab == 0; }

// The Winograd kernels' problems (kernel_registry.h, generators/winograd.h): 2-D 3x3 with
// unit strides and dilations (any padding), or 3-D (3x3 in each depth slice, at most
// kWinogradMaxDepthTaps depth taps, run directly), both activations' channels per group whole slabs
// (every target's register tiles divide kChannelSlab, and the transforms vectorise both),
// 36 x C_in x C_out values that stay in cache (the filter gradient's: few per tile), and little
// work on tiles past the edge of the activation they tile (act1: dx for the data gradient,
// dy for the filter gradient).
bool winograd_fits(Direction d, const ConvProblem &p, const CanonicalView &act0, const CanonicalView &act1) {
    // Spatial axes outermost first: (h, w), or (d, h, w).
    const int rank = p.spatial_rank;
    if (rank != 2 && rank != 3) return false;
    for (int a = 0; a < rank; a++) {
        const bool slice_axis = a >= rank - 2;
        if ((slice_axis && p.kernel_size[a] != 3) || p.strides[a] != 1 || p.dilations[a] != 1) return false;
    }
    const int64_t depth_taps = rank == 3 ? p.kernel_size[0] : 1;
    if (depth_taps > kWinogradMaxDepthTaps) return false;
    if (!whole_channel_slabs(act0) || !whole_channel_slabs(act1)) return false;
    // The filter gradient's channels-first copies gather where pixels are not contiguous
    // (dilation phases: NCHW dl_3x3_d2 ran 14x slower): NXC, or NCX with contiguous pixels.
    const auto dense = [](const CanonicalView &v) { return v.stride[kC] == 1 || v.stride[kX] == 1; };
    if (d == Direction::kBackwardWeights && !(dense(act0) && dense(act1))) return false;
    const int64_t filter_bytes =
        kWinogradProducts * depth_taps * p.groups * act0.extent[kC] * act1.extent[kC] * dtype_size(p.dtype);
    if (filter_bytes > kWinogradMaxFilterBytes) return false;
    const int64_t w = act1.extent[kX], h = act1.extent[canonical::kY], slices = act1.extent[canonical::kZ];
    const auto tiles_along = [](int64_t e) { return (e + kWinogradTile - 1) / kWinogradTile; };
    const int64_t slice_tiles = tiles_along(w) * tiles_along(h), tiles = slice_tiles * slices * p.batch;
    // (The Zen 5's data-gradient bound over many tiles where the kernel reads whole vectors:
    // NCX's phases, rows of every other pixel, ran slower on Winograd there, NCHW dl_3x3_d2
    // 0.86x.)
    const bool zen5 = registry_cpu_zen5();
    const int64_t filter_sum_bytes = zen5 ? kWinogradFilterSumBytesPerTileZen5 : kWinogradFilterSumBytesPerTile;
    const bool zen5_data = zen5 && tiles >= kWinogradDataMinTilesZen5 && slice_tiles >= kWinogradDataMinSliceTilesZen5 &&
                           dense(act0) && dense(act1);
    const int64_t data_filter_bytes = zen5_data ? kWinogradDataFilterBytesPerTileZen5 : kWinogradDataFilterBytesPerTile;
    const int64_t bytes_per_tile = d == Direction::kBackwardWeights ? filter_sum_bytes : data_filter_bytes;
    if (filter_bytes > bytes_per_tile * tiles) return false;
    const int64_t tiled = slice_tiles * kWinogradTile * kWinogradTile;
    // Every pixel along x (channels-last: a pixel's channels and groups apart; channels-first:
    // 1), or a dilation phase's every d-th one. (Phases along y alone skip rows, not pixels:
    // the stricter bound, not measured there.)
    const bool every_pixel = act1.stride[kX] == 1 || act1.stride[kX] == act1.extent[kC] * act1.extent[kG];
    double max_overcompute = every_pixel ? kWinogradMaxOvercompute : kWinogradMaxPhaseOvercompute;
    // (On a Zen 5 small images lose the data gradient's tiles past their edge: 7x7.)
    if (zen5 && d == Direction::kBackwardData && slice_tiles < kWinogradDataMinSliceTilesZen5) {
        max_overcompute = std::min(max_overcompute, kWinogradDataMaxSmallSliceOvercomputeZen5);
    }
    return tiled <= max_overcompute * w * h;
}

// Along axis `a` (ConvProblem's, outermost first), how many of one image's output positions
// (dy's) at the start have a tap that reads before x, and at the end one that reads past it.
struct PositionsPastX {
    int64_t out, before, after;
};
PositionsPastX positions_past_x(const ConvProblem &p, const CanonicalView &x, const CanonicalView &dy, int a) {
    const auto ceil_div = [](int64_t n, int64_t d) { return n >= 0 ? (n + d - 1) / d : -(-n / d); };
    const int dim = kX + (p.spatial_rank - 1 - a);
    const int64_t out = dy.extent[dim], in = x.extent[dim], pad = p.pads_begin[a];
    const int64_t last = (p.kernel_size[a] - 1) * p.dilations[a];
    return {out, std::clamp<int64_t>(ceil_div(pad, p.strides[a]), 0, out),
            std::clamp<int64_t>(out - ceil_div(in + pad - last, p.strides[a]), 0, out)};
}

// Whether the output positions of one image (dy's) whose taps reach past x along some axis,
// the frame that the depthwise plain-x kernel (nxg_xp, generators/bwd_weights_generator.cpp)
// reads x clamped on and corrects, are at most 1 / kDepthwisePlainXFrameShare of them.
bool frame_fits(const ConvProblem &p, const CanonicalView &x, const CanonicalView &dy) {
    int64_t all = 1, interior = 1;
    for (int a = 0; a < p.spatial_rank; a++) {
        const PositionsPastX e = positions_past_x(p, x, dy, a);
        all *= e.out;
        interior *= std::max<int64_t>(0, e.out - e.before - e.after);
    }
    return (all - interior) * kDepthwisePlainXFrameShare <= all;
}

// Whether, strided along x, only the last output column's taps read past x's end: the
// depthwise plain-x kernel's reduction (nxg_xp, generators/bwd_weights_generator.cpp) reads
// the columns before it unclamped.
bool last_column_alone_past_x(const ConvProblem &p, const CanonicalView &x, const CanonicalView &dy) {
    const int a = p.spatial_rank - 1;  // (x: ConvProblem's innermost axis)
    return p.strides[a] == 1 || positions_past_x(p, x, dy, a).after <= 1;
}

// The group-task kernel's problems (kernel_registry.h: kGroupTaskMaxPositions): 2-D square
// filters of 3 or 5 taps (its taps in registers), small planes (smaller for float32 3x3
// filters strided along x, kGroupTaskMaxStridedPositions), enough groups.
bool group_tasks_fit(const ConvProblem &p, const CanonicalView &dy) {
    const int r = p.spatial_rank;
    if (r < 2) return false;
    const int64_t k = p.kernel_size[r - 1];
    if ((k != 3 && k != 5) || p.kernel_size[r - 2] != k || (r == 3 && p.kernel_size[0] != 1)) return false;
    const bool strided = p.dtype == DType::kFloat32 && k == 3 && p.strides[r - 1] != 1;
    return dy.extent[kX] * dy.extent[canonical::kY] * dy.extent[canonical::kZ] <=
               (strided ? kGroupTaskMaxStridedPositions : kGroupTaskMaxPositions) &&
           dy.extent[kG] * dtype_size(p.dtype) >= kGroupTaskMinGroupBytes;
}

// The whole-reduction filter gradient's problems (kernel_registry.h:
// kWholeReductionMaxPositions): an XIO filter, few dy positions over all images, a tile's
// channels per group on both sides (act0 is x, act1 is dy).
bool whole_reduction_fits(const ConvProblem &p, const CanonicalView &x, const CanonicalView &dy) {
    using canonical::kN;
    using canonical::kY;
    using canonical::kZ;
    return p.filter_layout == FilterLayout::kXIO &&
           dy.extent[kX] * dy.extent[kY] * dy.extent[kZ] * dy.extent[kN] <= kWholeReductionMaxPositions &&
           x.extent[kC] >= kWholeReductionMinXChannels && dy.extent[kC] >= kWholeReductionMinDyChannels;
}

// The in-place depthwise data gradient's problems (kernel_registry.h: kInPlaceMinGroupBytes):
// 2-D 3x3 filters, unit strides and dilations, enough groups (act1 is dx).
bool in_place_fits(const ConvProblem &p, const CanonicalView &dx) {
    if (p.spatial_rank != 2) return false;
    for (int a = 0; a < 2; a++) {
        if (p.kernel_size[a] != 3 || p.strides[a] != 1 || p.dilations[a] != 1) return false;
    }
    return dx.extent[kG] * dtype_size(p.dtype) >= kInPlaceMinGroupBytes;
}

// The flat-plane filter gradient's problems (kernel_registry.h: kFlatFilterPlaneMax): 2-D,
// unit strides, x (act0) and dy (act1) of one row width with contiguous rows and dense planes
// (each image's planes one row), 3 groups or more (the first and last are read through
// zeros), small planes over enough images, no 4 KB image stride, and every vector's reads
// (kFlatFilterVectorLanes positions, each tap's offset on) inside the next plane.
bool flat_filter_fits(const ConvProblem &p, const CanonicalView &x, const CanonicalView &dy) {
    using canonical::kY;
    using canonical::kZ;
    using canonical::kN;
    if (p.spatial_rank > 2 || p.groups < 3 || x.extent[kX] != dy.extent[kX]) return false;
    for (int a = 0; a < p.spatial_rank; a++) {
        if (p.strides[a] != 1) return false;
    }
    const int64_t bytes = dtype_size(p.dtype);
    for (const CanonicalView *v : {&x, &dy}) {
        const int64_t plane = v->extent[kX] * v->extent[kY];
        if (v->stride[kX] != 1 || !spatial_dims_nest(*v) || v->extent[kZ] != 1 || v->stride[kG] != plane) return false;
        if (v->extent[kN] > 1 && (v->stride[kN] * bytes) % kFlatFilterAliasBytes == 0) return false;
    }
    const int64_t width = dy.extent[kX], x_plane = x.extent[kX] * x.extent[kY], dy_plane = dy.extent[kX] * dy.extent[kY];
    if (dy_plane > kFlatFilterPlaneMax || dy.extent[kN] < kFlatFilterMinImages) return false;
    // Taps' offsets in the flat plane: (ky * d_y - pad_y) * W + kx * d_x - pad_x
    // (ConvProblem's spatial axes run outermost first: x is the last).
    const int ax = p.spatial_rank - 1, ay = p.spatial_rank - 2;
    const int64_t dx_ = p.dilations[ax], dy_ = ay >= 0 ? p.dilations[ay] : 1;
    const int64_t px = p.pads_begin[ax], py = ay >= 0 ? p.pads_begin[ay] : 0;
    const int64_t ky_last = ay >= 0 ? p.kernel_size[ay] - 1 : 0, kx_last = p.kernel_size[ax] - 1;
    const int64_t off_min = -py * width - px;
    const int64_t off_max = (ky_last * dy_ - py) * width + kx_last * dx_ - px;
    const int64_t span = (dy_plane + kFlatFilterVectorLanes - 1) / kFlatFilterVectorLanes * kFlatFilterVectorLanes;
    return x_plane + off_min >= 0 && span <= 2 * dy_plane && span + off_max <= 2 * x_plane;
}

}  // namespace

const std::vector<KernelEntry> &kernel_table() {
    static const std::vector<KernelEntry> table = {
// floor: every_path, or from_avx2 (an x86 refinement built without the SSE4.1 body).
#define CONVGRAD_KERNEL(direction, dtype, layout, floor)                                                \
    {#direction "_" #dtype "_" #layout, #layout, direction_##direction, dtype_##dtype, layout_##layout, \
     convgrad_##direction##_##dtype##_##layout, Device::kCpu, 0, false, floor_##floor},
// GPU kernels (CUDA per capability, highest first; OpenCL): stride- and layout-agnostic.
#define CONVGRAD_GPU_KERNEL(direction, dtype, variant, api, capability)                               \
    {#direction "_" #dtype "_" #variant, "any", direction_##direction, dtype_##dtype, layout_any, \
     convgrad_##direction##_##dtype##_##variant, device_##api, capability},
#include "kernel_list.inc"
#undef CONVGRAD_KERNEL
#undef CONVGRAD_GPU_KERNEL
    };
    return table;
}

bool KernelEntry::accepts(Direction d, const ConvProblem &p, const CanonicalView &act0,
                          const CanonicalView &act1, const Placement &where) const {
    if (d != direction || p.dtype != dtype || device != where.device) return false;
    if (device == Device::kCuda && capability > where.cuda_capability) return false;
    if (from_avx2 && !jit && !cpu_takes_avx2()) return false;
    // Depthwise kernels are built for one channel per group (they assert it).
    if (needs.one_channel_per_group && (act0.extent[kC] != 1 || act1.extent[kC] != 1)) return false;
    // x-phase kernels: the data gradient with stride 2 along x (the problem's innermost
    // spatial axis) and an even dx width (act1 is dx), so dx splits into two equal phases.
    if (needs.x_phases) {
        if (p.strides[p.spatial_rank - 1] != 2 || act1.extent[kX] % 2 != 0) return false;
    }
    // Pixel-vector kernels: few dx channels per group (NXC; NCX takes any). The data gradient's tiles span pixels
    // along x, so every pixel must take the same taps (unit strides, or the x-phase view of
    // stride 2). Channels-first ones (ncg_s2_px, ncx_px) vectorise along rows (dx's for the data
    // gradient, dy's for the filter gradient): rows (of one x phase) narrower than
    // kPixelVectorMinRow would leave most lanes empty, and go to the channel-vector kernels.
    if (needs.pixel_vectors) {
        // NXC only: the NCX tiles take any channel count.
        if (needs.unit_stride_dim == kC && act1.extent[kC] > kPixelVectorChannels) return false;
        if (d == Direction::kBackwardData && !needs.x_phases) {
            for (int a = 0; a < p.spatial_rank; a++) {
                if (p.strides[a] != 1) return false;
            }
        }
        const int row = act1.extent[kX] / (needs.x_phases ? 2 : 1);  // pixels of one phase
        if (needs.unit_stride_dim == kX && row < kPixelVectorMinRow) return false;
        // NCX with more channels has the channel-vector ncx kernel to fall back on: the row
        // tiles (whole vectors, the last one shifted inwards) must not compute more than
        // ~1.2x the row (dl_3x3_d2's 33-pixel rows computed 48 per row and ran 1.5x slower).
        if (needs.unit_stride_dim == kX && !needs.one_channel_per_group && act1.extent[kC] > kPixelVectorChannels) {
            const int vectors = (row + kPixelVectorMinRow - 1) / kPixelVectorMinRow;
            if (row * 100 < 85 * vectors * kPixelVectorMinRow) return false;
            // Each NCX data-gradient tile reduces over every dy channel's staged rows (per
            // channel and row of taps, a line per vector of the tile and one more): past
            // kPixelVectorMaxTileBytes of them, more than L1 holds, every load came from L2.
            // There the channel-vector kernels ran 1.4-2.4x faster (NCHW rn50_1x1_56; 256 dy
            // channels over 3x3 taps, and 128 over 28-pixel rows); at rn50_3x3_56's 64 the
            // two tie.
            // (Pointwise tiles read dy in place, every channel tile of a run of pixels in
            // turn, so they share that block of dy from cache instead.)
            if (d == Direction::kBackwardData && !needs.pointwise) {
                const int64_t row_taps = taps_along(p, p.spatial_rank - 1);
                const int64_t lines = act0.extent[kC] * row_taps * (std::min(vectors, kPixelVectorTile) + 1);
                if (lines * 64 > kPixelVectorMaxTileBytes) return false;
            }
        }
    }
    // Flat-plane kernels read each plane as one row (generators/flat_planes.h): 2-D, unit
    // strides, both planes of one width, rows contiguous (the flat view's requirement), and
    // planes (dx's) of kFlatPlaneMin to kFlatPlaneMax positions, or with at most
    // kFlatSmallPlaneTaps taps, kFlatPlaneMinSmallFilter to kFlatSmallPlaneMax.
    if (needs.flat_planes && d == Direction::kBackwardWeights && !flat_filter_fits(p, act0, act1)) return false;
    if (needs.flat_planes && d == Direction::kBackwardData) {
        if (p.spatial_rank > 2) return false;
        for (int a = 0; a < p.spatial_rank; a++) {
            if (p.strides[a] != 1) return false;
        }
        if (act0.extent[kX] != act1.extent[kX]) return false;
        const int64_t plane = act1.extent[kX] * act1.extent[canonical::kY];
        const bool small_filter = taps_along(p, p.spatial_rank) <= kFlatSmallPlaneTaps;
        const bool mid_plane = plane >= kFlatPlaneMin && plane <= kFlatPlaneMax;
        const bool small_plane = small_filter && plane >= kFlatPlaneMinSmallFilter && plane <= kFlatSmallPlaneMax;
        if (!mid_plane && !small_plane) return false;
        // (x is contiguous: unit_stride_dim, below.)
        for (const CanonicalView *v : {&act0, &act1}) {
            if (!spatial_dims_nest(*v) || v->extent[canonical::kZ] != 1) return false;
        }
    }
    // Small-group kernels. The data gradient's stage dy with kSmallGroupChannels slots per
    // pixel (act0 is dy) and, on x86, tile pairs of groups. The filter gradient's tiles span
    // pairs of groups of kSmallGroupPairChannels dy channels (act1 is dy) and at least as many
    // x channels.
    if (needs.small_groups) {
        if (d == Direction::kBackwardData && (p.groups % 2 != 0 || act0.extent[kC] >= kSmallGroupChannels)) return false;
        if (d == Direction::kBackwardWeights &&
            (p.groups % 2 != 0 || act1.extent[kC] != kSmallGroupPairChannels || act0.extent[kC] < kSmallGroupPairChannels)) {
            return false;
        }
    }
    // Channel-slab kernels' tiles are whole slabs of dx channels (act1 is dx).
    if (needs.channel_slabs && !whole_channel_slabs(act1)) return false;
    // Dy-broadcast kernels: pointwise (as the kernels see it: runtime/src/execute.cpp
    // flattens such planes into long rows), x channels per group (act0) at least
    // kDyBroadcastMinChannels and dy's (act1) at least as many.
    if (needs.dy_broadcasts) {
        if (!is_pointwise(p) || act0.extent[kC] < kDyBroadcastMinChannels || act1.extent[kC] < act0.extent[kC]) return false;
    }
    // Pointwise data-gradient kernels read dy at dx's own positions: one tap, unit strides,
    // no padding (as flattened: runtime/src/execute.cpp); NXC's in whole slabs of dx channels.
    if (needs.pointwise) {
        if (!is_pointwise(p)) return false;
        if (needs.unit_stride_dim == kC && act1.extent[kC] % kPointwiseSlab != 0) return false;
        // NCX (ncx_px_pw): layers with many channels on both sides go to ncx_cs where it takes
        // them (its own test, above), kernel_registry.h: kPointwiseRowTileMaxProducts.
        const int64_t ci = act1.extent[kC], co = act0.extent[kC];
        if (needs.unit_stride_dim == kX && whole_channel_slabs(act1) && ci * co >= kPointwiseRowTileMaxProducts * (ci + co)) {
            return false;
        }
    }
    if (needs.winograd && (where.direct_sums_only || !winograd_fits(d, p, act0, act1))) return false;
    // Staged-dy kernels: dy (act1) that streams from memory, pixels wider than two lines,
    // filters of at most 3x3 taps; on Intel cores, planes of more frame than nxg_xp takes.
    if (needs.staged_dy) {
        const int64_t bytes = dtype_size(p.dtype);
        const int64_t pixel = act1.extent[kC] * act1.extent[kG] * bytes;
        if (act1.num_elements() * bytes < kStagedDyMinBytes || pixel <= kStagedDyMinPixelBytes ||
            taps_along(p, p.spatial_rank) > kStagedDyMaxTaps) {
            return false;
        }
        if (registry_cpu_intel() && frame_fits(p, act0, act1)) return false;  // (kernel_registry.h)
    }
    if (needs.group_tasks && !group_tasks_fit(p, act1)) return false;
    if (needs.whole_reduction && !whole_reduction_fits(p, act0, act1)) return false;
    if (needs.dy_in_place && !in_place_fits(p, act1)) return false;
    // Depthwise plain-x kernels (nxg_xp): strides of at most 2 (where x's reflected edge is a
    // pixel the same tap reads), at most kDepthwisePlainXMaxTaps taps, at most
    // 1 / kDepthwisePlainXFrameShare of the positions in the frame they correct, and strided
    // along x, only the last column's taps past x's end.
    if (needs.plain_x && needs.one_channel_per_group) {
        for (int a = 0; a < p.spatial_rank; a++) {
            if (p.strides[a] > 2) return false;
        }
        if (taps_along(p, p.spatial_rank) > kDepthwisePlainXMaxTaps) return false;
        if (!frame_fits(p, act0, act1) || !last_column_alone_past_x(p, act0, act1)) return false;
        if (registry_cpu_intel() && !depthwise_plain_x_pays_on_intel(p)) return false;
    } else if (needs.plain_x) {
        // Plain-x kernels: few products per element of x (its group's dy channels, act1, times
        // the taps over the strides' product), and x (act0) that streams from memory.
        int64_t strides = 1;
        for (int a = 0; a < p.spatial_rank; a++) strides *= p.strides[a];
        const int64_t max_products = plain_x_max_products(needs.unit_stride_dim == kX);
        if (act1.extent[kC] * taps_along(p, p.spatial_rank) > max_products * strides ||
            act0.num_elements() * dtype_size(p.dtype) < kPlainXMinBytes) {
            return false;
        }
    }
    const int dim = needs.unit_stride_dim;
    return dim == kNone || (act0.stride[dim] == 1 && act1.stride[dim] == 1);
}

namespace {
std::atomic<RegistryCpu> g_registry_cpu{RegistryCpu::kHost};
}  // namespace

void set_registry_cpu(RegistryCpu cpu) { g_registry_cpu.store(cpu); }

bool registry_cpu_intel() {
    static const bool host_intel = host_cpu_vendor() == "GenuineIntel";
    const RegistryCpu cpu = g_registry_cpu.load();
    return cpu == RegistryCpu::kIntel || (cpu == RegistryCpu::kHost && host_intel);
}

bool registry_cpu_zen5() {
    static const bool host_zen5 = host_cpu_vendor() == "AuthenticAMD" && host_cpu_family() >= 26;
    const RegistryCpu cpu = g_registry_cpu.load();
    return cpu == RegistryCpu::kZen5 || (cpu == RegistryCpu::kHost && host_zen5);
}

int64_t plain_x_max_products(bool channels_first) {
    if (registry_cpu_intel()) return channels_first ? kChannelsFirstPlainXMaxProductsIntel : kPlainXMaxProductsIntel;
    return kPlainXMaxProducts;
}

bool depthwise_plain_x_pays_on_intel(const ConvProblem &p) {
    static const bool avx512 = expected_isa_path() == "avx512_skylake";  // CONVGRAD_MAX_CPU_ISA included
    if (!avx512) return false;
    const int64_t lanes = 64 / dtype_size(p.dtype);
    return p.groups % (2 * lanes) == 0 || p.groups <= kDepthwisePlainXIntelMaxVectors * lanes;
}

bool has_kernels(Direction d, DType t, Device device) {
    const auto &table = kernel_table();
    return std::any_of(table.begin(), table.end(),
                       [&](const KernelEntry &e) { return e.direction == d && e.dtype == t && e.device == device; });
}

const KernelEntry *select_entry(Direction d, const ConvProblem &p, const CanonicalView &act0,
                                const CanonicalView &act1, const Placement &where) {
    for (const KernelEntry &e : kernel_table()) {
        if (e.accepts(d, p, act0, act1, where)) return &e;
    }
    return nullptr;
}

}  // namespace convgrad
