// The kernel registry: one ordered table, as in oneDNN's cpu_convolution_list.cpp. The first
// entry whose predicate accepts the problem runs; the generic ("any" layout) kernel is last
// for each (direction, dtype), so every valid problem has a kernel.
#pragma once

#include <vector>

#include "HalideRuntime.h"
#include "../../generators/streaming_sizes.h"
#include "canonical_view.h"
#include "convgrad/convgrad.h"

namespace convgrad {

// The signature every AOT kernel has (both generators, user_context feature):
// strides (x, y, z), dilations (x, y, z), pads_begin (x, y, z), two inputs, the result.
using KernelFn = int (*)(void const *user_context, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                         int32_t, int32_t, int32_t, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

// What a kernel variant needs of the activation views.
struct LayoutRequirement {
    int unit_stride_dim;         // canonical activation dim that must be contiguous; -1: none
    bool one_channel_per_group;  // depthwise variants (nxg, ncg)
    bool x_phases = false;       // stride-2 variants (_s2): stride 2 along x, even dx width;
                                 // dx is passed through its 7-D x-phase view (canonical.h)
    bool pixel_vectors = false;  // few-channel variants (_px): at most kPixelVectorChannels
                                 // dx channels per group; data gradient: unit strides unless
                                 // x_phases; ncg_s2_px, ncx_px: rows of at least kPixelVectorMinRow
    bool small_groups = false;   // nxc_sg: data gradient, fewer than kSmallGroupChannels dy channels
                                 // per group; filter gradient, pairs of kSmallGroupPairChannels
    bool flat_planes = false;    // ncg_fp: 2-D, unit strides, both activations' planes of one
                                 // width with contiguous rows; passed through their flat views
                                 // (generators/flat_planes.h; the filter gradient's: each
                                 // image's dense planes one row, kFlatFilterPlaneMax below)
    bool channel_slabs = false;  // nxc_cs, ncx_cs: dx channels per group a multiple of kChannelSlab
    bool dy_broadcasts = false;  // ncx_db: pointwise, at least kDyBroadcastMinChannels x channels
                                 // per group and as many dy channels
    bool pointwise = false;      // nxc_pw, ncx_px_pw: pointwise data gradients; nxc_pw: dx
                                 // channels per group a multiple of kPointwiseSlab
    bool winograd = false;       // nxc_wg, ncx_wg: 3x3 (2-D, or in each depth slice), unit strides and dilations, both
                                 // activations' channels per group multiples of kChannelSlab
    bool staged_dy = false;      // nxg_sd: dy of at least kStagedDyMinBytes, pixels wider than
                                 // kStagedDyMinPixelBytes, at most kStagedDyMaxTaps taps
    bool plain_x = false;        // nxc_xp, ncx_xp: at most plain_x_max_products() products per x
                                 // element, x of at least kPlainXMinBytes; nxg_xp: at most
                                 // kDepthwisePlainXMaxTaps taps, strides of at most 2, a third
                                 // of the positions in the frame, strided along x only the
                                 // last column's taps past x's end
    bool group_tasks = false;    // nxg_gt: 3x3 or 5x5 filters, at most kGroupTaskMaxPositions dy
                                 // positions per image (kGroupTaskMaxStridedPositions: float32
                                 // 3x3 strided along x), kGroupTaskMinGroupBytes of groups or more
    bool dy_in_place = false;    // nxg_ip: data gradient, 2-D 3x3 filters, unit strides and
                                 // dilations, kInPlaceMinGroupBytes of groups or more
    bool whole_reduction = false;  // nxc_wr: filter gradient, an XIO filter, at most
                                   // kWholeReductionMaxPositions dy positions, at least
                                   // kWholeReductionMinXChannels x and kWholeReductionMinDyChannels
                                   // dy channels per group
};

// The most dx channels per group the pixel-vector variants take (generators/bwd_data.h).
constexpr int kPixelVectorChannels = 4;
// The narrowest rows the channels-first pixel-vector variants (ncg_s2_px, ncx_px) take: one AVX-512
// vector of float32 (they vectorise along rows).
constexpr int kPixelVectorMinRow = 16;
// The channels-first data gradient's pixel-vector tiles (ncx_px): at most this many vectors of a
// row (AVX-512's px_vectors, schedules/cpu_bwd_data_pixels.cpp), and at most this many bytes
// of dy's staged rows per tile's reduction (kernel_table.cpp: larger go to ncx_cs or ncx).
constexpr int kPixelVectorTile = 4;
constexpr int64_t kPixelVectorMaxTileBytes = 64 * 1024;
// NCX pointwise data gradients: ncx_cs transposes dy and dx through cache (ci + co elements a
// position) for ci * co products a position, in channel-vector tiles; ncx_px_pw transposes
// nothing, in row tiles. Where ci * co / (ci + co) reaches this, the copies cost little and
// ncx_cs ran faster, so ncx_px_pw leaves those layers to it. Kernel alone (AVX-512, float32,
// ms ratio ncx_px_pw / ncx_cs, > 1: ncx_cs faster): 1024 <- 256 on 14x14 1.45x (batch 1
// 1.38x, 2 1.65x), 256 <- 1024 1.72x, 768 <- 256 1.37x, 512 <- 256 1.29x, 256 <- 256 1.19x,
// 512 <- 512 on 28x28 1.17x, 256 <- 512 1.10x; below it ncx_px_pw: 128 <- 512 0.98x,
// 1024 <- 128 0.73x, 512 <- 128 at batch 1 0.49x, rn50_1x1_56 (64 <- 256) 0.54x, 256 <- 64
// 0.51x. float64 alike (1.43x, 1.13x, 0.49x; batch-1 1024 <- 256 1.71x); the AVX2 path
// 1.23x, 1.03x, 0.69x.
constexpr int64_t kPointwiseRowTileMaxProducts = 128;
// The planes (positions) the flat-plane data gradient (ncg_fp) takes: from 4 AVX-512 vectors
// of float32 to kFlatPlaneMax, and with at most kFlatSmallPlaneTaps taps (3x3) also planes of
// one vector to kFlatSmallPlaneMax, where its tasks, which stage 32 planes before computing
// any (schedules/cpu_flat_planes.cpp), beat ncg. Kernel alone on the Zen 1 (AVX2, batch 8,
// 3x3, ms, ncg_fp / ncg; bench/RESULTS.md, thirty-seventh session): 14x14 planes 0.77 / 0.92
// (576 groups) and 0.49 / 0.52 (384), 28x28 1.01 / 1.03 (in the suite 0.95-1.02 / 1.02-1.05),
// 56x56 3.18 / 2.92, 112x112 2.86 / 2.48, 7x7 0.46 / 0.36 (batch 1 0.136 / 0.115), 6x6
// 0.100 / 0.092, 5x5 0.009 / 0.015, 4x4 0.079 / 0.119; 200x200 (16 groups) 4.6 / 5.2 is left
// to ncg with the other large planes.
// A 5x5 filter on 7x7 planes ran 1.08 / 0.66, a 7x7 one on 56x56 9.4 / 5.7. (The filter
// gradient had flat-plane and row-vector variants too, with each plane copied and every load
// masked: since ncg's transposing copies work in 128-bit lanes, ncg ran them 1.6-1.8x faster,
// every suite shape: thirty-sixth session. Its flat-plane kernel now reads x in place:
// kFlatFilterPlaneMax below. The data gradient's unit-stride row-vector ncg_px ran 1.2-7x
// slower than ncg.)
constexpr int kFlatPlaneMin = 64;
constexpr int kFlatPlaneMax = 1024;
constexpr int kFlatPlaneMinSmallFilter = 16;
constexpr int kFlatSmallPlaneMax = 25;
constexpr int kFlatSmallPlaneTaps = 9;
// The flat-plane filter gradient (ncg_fp: each image's planes one row, x read in place,
// generators/flat_planes.h) takes dy planes of at most kFlatFilterPlaneMax positions over at
// least kFlatFilterMinImages images: there its sums over the images amortise each group's
// masked sums across lanes. Kernel alone on the Zen 4 (AVX-512, 3x3, ms, ncg_fp / ncg; bench/
// RESULTS.md, forty-third session): 7x7 planes, 960 groups, batch 8 0.098 / 0.129, batch 4
// 0.056-0.064 / 0.071-0.073, batch 1 0.030 / 0.033; 10x10 (256, batch 4) 0.026 / 0.055;
// 14x14 (576 groups, batch 8) 0.175 / 0.208-0.221, batch 2 0.067 / 0.061, batch 1 0.040 /
// 0.034; 16x16 (200 groups) 0.087 / 0.095-0.117; 28x28 ties (200 groups: 0.25 / 0.25), and larger planes lose
// (56x56 2.0 / 1.25, 112x112 1.9 / 0.97: each image a stream of its own, 16 at once). Nor
// where an image's planes span a multiple of 4 KB (kFlatFilterAliasBytes): then the 2N lines a
// step reads (x's and dy's, one per image) fall into one L1 set (8 ways) and are evicted
// before the next step reuses them (14x14 over 512 groups 0.199 / 0.190; 28x28 over 192
// groups 0.42 in a prototype against 0.22 over 200).
// The kernel's vectors of a plane (at most kFlatFilterVectorLanes lanes: AVX-512 float32)
// read up to a vector past the plane's end, and each tap up to its offset past that, from
// the next plane: the registry takes only planes that leave those reads inside the image's
// row for every group but the last, which the kernel reads through zeros, as the first.
constexpr int kFlatFilterPlaneMax = 256;
constexpr int kFlatFilterMinImages = 4;
constexpr int64_t kFlatFilterAliasBytes = 4096;
constexpr int kFlatFilterVectorLanes = 16;
// The small-group variant (nxc_sg) stages dy with this many slots per pixel (generators/bwd_data.h)
// and takes fewer dy channels per group: with 16 over 16 dx channels it measured 0.87-0.98x nxc.
// Its x86 tiles hold pairs of groups, so it takes an even number of groups.
constexpr int kSmallGroupChannels = 16;
// The filter gradient's small-group variants (nxc_sg, ncx_sg) take an even number of groups of
// this many dy channels (half an AVX-512 vector of float32: a tile's vector holds a pair of
// groups) and at least as many x channels (its tile's 8 of ci). There x and dy are staged
// per chunk, each pair's pixels contiguous: kernel alone, rx_g32_28 NHWC 1.36x against nxc,
// NCHW 1.56x against ncx (fortieth session).
constexpr int kSmallGroupPairChannels = 8;
// The channel-slab variants (nxc_cs, ncx_cs) take dx channels per group in multiples of this
// (generators/bwd_data.h: every target's tile width divides it).
constexpr int kChannelSlab = 32;
// The pointwise data-gradient variant (nxc_pw: every kernel size 1, unit strides, no padding,
// over the flattened positions) takes dx channels per group in multiples of this
// (generators/bwd_data.h: every target's pointwise tile width divides it).
constexpr int kPointwiseSlab = 64;
// The dy-broadcast variant (ncx_db) takes pointwise filter gradients (every kernel size 1,
// unit strides, no padding: long flattened rows) whose dy has at least as many channels per
// group as x, and x at least this many (its AVX-512 float32 tile's vectors of ci). There it
// skips transposing the larger activation (NCHW rn50_1x1_56 1.65x, kernel alone); with 3x3
// filters (14-pixel rows: 8 row pointers set up per row and tap) its tiles ran 1.25x slower
// than ncx's, and rn50_1x1_7 (dy a quarter of x, 49-pixel rows) 0.65x.
constexpr int kDyBroadcastMinChannels = 32;
// The staged-dy variant (nxg_sd: NHWC depthwise filter gradients with each chunk's rows of
// dy staged in cache, as x's are) takes dy of at least kStagedDyMinBytes (that streams from
// memory: larger than a core's L2 share of the L3 lets it stay) whose pixels (all groups)
// span more than kStagedDyMinPixelBytes, two cache lines: the plain nxg's tiles, a vector of
// groups each, then read dy in place a line per pixel, one strided stream per tile. Kernel
// alone on the Zen 4 (AVX-512 f32, batch 8, ms ratio nxg / nxg_sd): mb_dw144_56 (14.5 MB,
// 576-byte pixels) 1.24-1.33x, mb_dw96s2_112 (9.6 MB of dy, 384) 1.16x; dy in cache,
// staging is one pass more: mb_dw192_28 (4.8 MB) 0.75x, 7x7 planes 0.75-0.81x; and
// mb_dw32_112 (12.8 MB, 128-byte pixels: one two-vector tile reads each pixel whole) 0.83-0.87x.
// Off the suite, batch 16 of mb_dw192_28 1.12x, 64 groups on 112x112 (batch 4) 1.39x, 48
// groups 1.18x; with 5x5 filters the tiles do 25 FMAs per dy vector and the staging pass
// was not paid back (mb_dw144_56's shape 0.88-0.95x, stride 2 on 96 groups 1.01x): at most
// kStagedDyMaxTaps taps.
// On an Intel Xeon (family 6 model 207) nxg_sd lost to nxg on planes whose frame is small
// enough for nxg_xp (kDepthwisePlainXFrameShare): ms ratio nxg_sd / nxg, float32 3x3, AVX-512
// and AVX2 paths: mb_dw144_56 1.08 and 1.14, mb_dw96s2_112 1.32 and 1.23, 208 groups on 40x40
// 1.36 (AVX-512), 48 groups on 56x56 over 16 images 1.09 (AVX2); it won on planes of mostly
// frame (48 groups on 8x8 over 700 images: 0.74 and 0.84; bench/RESULTS.md, sixty-seventh
// session). On Intel cores it takes only those.
constexpr int64_t kStagedDyMinBytes = kStreamingDyMinBytes;
constexpr int64_t kStagedDyMinPixelBytes = 128;
constexpr int64_t kStagedDyMaxTaps = 9;
// The dense filter gradients stage x in blocks of their tile's input channels (x_blocks, each
// block's pixels contiguous), a copy of all of x that the tiles' broadcasts repay where each
// element of x feeds many products: its group's dy channels times the taps, over the strides'
// product. The plain-x variants (nxc_xp, ncx_xp) stage x as it is; the registry gives them
// layers with at most kPlainXMaxProducts products per x element whose x, at least
// kPlainXMinBytes, streams from memory. Kernel alone on the Zen 4 (AVX-512 f32, batch 8,
// ms ratio blocks / plain; bench/RESULTS.md, forty-fourth session): rn50_3x3s2_28 (288
// products, 12.8 MB of x) NHWC 1.08x, NCHW 1.11x; rn50_1x1_56 (256, 6.4 MB) NHWC 1.10x;
// 512-576 products mixed (128 -> 512 on 28x28 0.96x, rn50_1x1_7 1.02x, 3x3 64 -> 64 on 56x56
// 1.04x), the stem (784) 0.93x; small x: 3x3 stride 2 over 128 channels on 32x32, batch 2
// (1 MB) 1.01x, 64 on 28x28, batch 1 (200 KB) 0.89x; off the suite, 3x3 stride 2 over 64
// channels on 112x112 1.08x, 1x1 stride 2 512 -> 1024 on 28x28 1.02x. The Zen 5 agreed
// (nxc_xp reading x in place: rn50_3x3s2_28 1.04-1.06x, rn50_1x1_56 1.08-1.10x).
constexpr int64_t kPlainXMaxProducts = 384;
// On an Intel Xeon (family 6 model 207, 2 MB of L2 a core) the blocks paid back far sooner.
// Kernel alone (AVX-512 f32 NHWC, batch 8, ms ratio nxc / nxc_xp; bench/RESULTS.md,
// fifty-ninth session): 64 products (pointwise 64 -> 64 on 56x56) 1.08x; 144 (3x3 stride 2)
// 1.25x over 64 channels on 112x112, 1.10x over 32 -> 64 on 112x112, 0.98x over 64 on 56x56;
// past that nxc won: pointwise 128 0.96x, 192 0.94x; 3x3 stride 2 over 96 channels (216)
// 0.88x; rn50_1x1_56 (256) 0.86x, 1x1 stride 2 512 -> 1024 (256) 0.965x; rn50_3x3s2_28
// (288) 0.93x. ncx_xp, which copies x transposed, lost to ncx on every layer measured there
// (1.06-1.99x its time, 64-288 products; fifty-eighth session): none on Intel.
constexpr int64_t kPlainXMaxProductsIntel = 144;
constexpr int64_t kChannelsFirstPlainXMaxProductsIntel = 0;
// The registry's CPU: the host's (cpu_info.cpp: host_cpu_vendor, host_cpu_family) unless a
// test names one. kOther: any other vendor's, or an AMD core before the Zen 5.
enum class RegistryCpu { kHost, kIntel, kOther, kZen5 };
void set_registry_cpu(RegistryCpu cpu);
// Whether the registry's CPU is Intel's.
bool registry_cpu_intel();
// Whether the registry's CPU is an AMD Zen 5 or later (family 26 on).
bool registry_cpu_zen5();
// The most products per x element the plain-x filter gradients take on the registry's CPU
// (channels first: ncx_xp; else nxc_xp).
int64_t plain_x_max_products(bool channels_first);
// Whether nxg_xp takes `p` on an Intel CPU (kDepthwisePlainXIntelMaxVectors, below): on the
// AVX-512 path, its groups a multiple of two vectors or at most that many vectors.
bool depthwise_plain_x_pays_on_intel(const ConvProblem &p);
// The depthwise plain-x variant (nxg_xp: NHWC depthwise filter gradients with x read in
// place, each index clamped (reflected at the edge along stride-2 axes), and the products of
// the frame's taps that reach past x, read so too, summed again and subtracted;
// generators/bwd_weights_generator.cpp) takes strides of at most 2 and filters of at most
// kDepthwisePlainXMaxTaps taps whose frame (the positions with a tap past x) is at most
// 1 / kDepthwisePlainXFrameShare of dy's positions. Strided along x, its reduction leaves
// out the first columns whose taps read before x and the last column, whose products the
// frame adds, and reads the others unclamped: only the last column's taps may reach past
// x's end (pads after of at most the stride, as SAME's for 3x3 and 5x5 filters). Kernel alone on
// the Zen 5 (AVX-512 f32, ms ratio of the kernel the registry took before / nxg_xp;
// bench/RESULTS.md, forty-seventh session): mb_dw32_112 1.18-1.38x, mb_dw96s2_112 1.63x (nxg_sd;
// 0.79x of that with the reflection), mb_dw144_56 1.09x (nxg_sd), mb_dw576s2_14 1.20x (0.85x of
// that with the reflection), mb_dw192_28 0.93-1.10x; off the suite 64 groups on 56x56 1.13x, 96 on
// 112x112 stride 2 batch 1 1.91x, dilation 2 1.35x, 48 groups on 33x31 1.37x. A 7x7 plane
// (mb_dw960_7: half its positions in the frame) ran 0.64x and a 5x5 filter on 28x28 0.73x.
constexpr int64_t kDepthwisePlainXMaxTaps = 9;
constexpr int64_t kDepthwisePlainXFrameShare = 3;
// On an Intel Xeon (family 6 model 207) nxg_xp paid only where its tile spans two vectors of
// groups (AVX-512's 32 registers, the groups a multiple of two vectors) or the pixels are at
// most kDepthwisePlainXIntelMaxVectors vectors wide: its one-vector tiles read one line of
// every pixel per pass from memory. Kernel alone, float32 3x3 unit stride, ms ratio nxg_xp /
// nxg (bench/RESULTS.md, sixty-sixth and sixty-seventh sessions): AVX-512, one-vector tiles,
// 144 groups on 56x56 (9 vectors, mb_dw144_56) 1.07-2.24, 208 on 40x40 1.69-1.79, 144 on
// 112x112 1.48; 48, 80 and 112 groups 0.86-1.02; two-vector tiles 0.70-0.92. The AVX2 path
// (16 registers: one-vector tiles) lost at every width: 32 groups on 112x112 (mb_dw32_112)
// 1.16, 48 on 56x56 1.24, 80 1.73, 112 1.55, 144 1.74, 96 on 112x112 stride 2
// (mb_dw96s2_112) 1.47. Those problems take nxg_sd or nxg there.
constexpr int64_t kDepthwisePlainXIntelMaxVectors = 8;
// The whole-reduction variant (nxc_wr: NHWC filter gradients whose tiles each sum every
// position in registers and store their sums into dw; no partial sums per chunk of rows, no
// pass adding them, none copying them into dw) takes XIO filters (dw's co contiguous: whole
// vectors stored) with at most kWholeReductionMaxPositions dy positions (all images) and
// tiles' worth of channels per group (8 of x, 32 of dy: AVX-512's 8 x 2-vector tile; the
// tile spans co_tile dy channels, the last tile shifted inwards, so fewer would read past
// dy). nxc splits its reduction into chunks of at least 512 positions (one chunk here) but
// writes, adds and copies the filter's partial sums all the same: three passes over dw,
// most of the call where the filter outweighs the positions' work. Kernel alone on the Zen 5
// (AVX-512 f32, ms ratio nxc / nxc_wr, both orders; bench/RESULTS.md, seventy-first
// session): batch-1 2048 -> 512 on 7x7 1.38-1.59x, batch-1 512 -> 512 3x3 on 7x7
// 1.36-1.46x, rn50_1x1_7 (392 positions) 1.12-1.13x, batch-2 1024 -> 256 on 14x14 1.05x,
// batch-1 256 -> 256 3x3 on 14x14 1.08-1.09x; at 784 positions even (512 -> 512 3x3 on 7x7
// over 16 images 0.98-1.08x, 256 -> 256 3x3 on 14x14 over 4 images 0.97-1.03x), at 1568
// nxc's chunks win (1024 -> 256 on 14x14 over 8 images 0.96x).
constexpr int64_t kWholeReductionMaxPositions = 512;
constexpr int64_t kWholeReductionMinXChannels = 8;
constexpr int64_t kWholeReductionMinDyChannels = 32;
// The group-task variant (nxg_gt: NHWC depthwise filter gradients where a thread's task is a
// block of groups, two vectors of them where there are (the last block shifted inwards),
// over every image: its taps summed
// in registers from the first image to the last, each image's plane of x staged with its
// zero border, dy read in place; no partial sums per chunk of rows, no pass adding them, and
// one parallel loop) takes 2-D 3x3 and 5x5 filters on planes of at most
// kGroupTaskMaxPositions dy positions, and at least kGroupTaskMinGroupBytes of groups per
// pixel (four AVX-512 float32 vectors: two tasks of two vectors). Kernel alone on the Zen 5
// (AVX-512 f32, batch 8 unless said, ms ratio of the kernel the registry took before /
// nxg_gt; bench/RESULTS.md, forty-eighth session): mb_dw960_7 1.4-2.2x (nxg), mb_dw576s2_14
// 1.4-1.5x (nxg_xp), mb_dw192_28 0.98-1.19x; off the suite 384 groups on 14x14 1.57x, 240 on
// 14x14 1.52x, 64 on 28x28 1.42x, 192 on 28x28 with dilation 2 1.53x, batch 1 of 960 on 7x7
// 2.2x and of 576 on 14x14 stride 2 1.9x, 144 groups with 5x5 filters on 28x28 2.2x and on
// 14x14 2.3x (nxg), 144 and 96 groups on 28x28 1.02-1.03x. Larger planes lost (a task's
// strided reads of dy and staged x miss the cache: 144 groups on 56x56 0.37x, batch 1
// 0.51x, 48 on 33x31 0.88x), and so did fewer groups (32 on 28x28, one task: 0.69x; 16 on
// 14x14 0.80x). The AVX2 path (16 registers: one-vector blocks), against its defaults:
// mb_dw960_7 1.44x, mb_dw576s2_14 1.78x, mb_dw192_28 1.40x, 64 groups on 28x28 1.60x.
constexpr int64_t kGroupTaskMaxPositions = 28 * 28;
// Float32 3x3 filters strided along x: past 20x20 dy positions, nxg_xp (whose reduction reads
// its inner columns unclamped, the fifty-first session) beat nxg_gt, kernel alone on the Zen 5
// (batch 8, stride 2; ms ratio nxg_gt / nxg_xp): 28x28 dy positions with 64-384 groups
// 1.38-1.85x, 96 groups 1.73x, 144 at batch 1 1.25x; the AVX2 path, 144 groups 2.10x. At
// 20x20: 64 groups 0.93x, 144-384 1.32-1.58x (AVX2 1.03-1.06x); at 17x17 0.83x (64 groups,
// both paths) and 1.08x (144); at 14x14 0.79-0.91x. (float64: not measured.)
constexpr int64_t kGroupTaskMaxStridedPositions = 20 * 20;
constexpr int64_t kGroupTaskMinGroupBytes = 256;
constexpr int64_t kPlainXMinBytes = int64_t(4) << 20;
// The in-place depthwise data gradient (nxg_ip: dy read in place through its zero padding,
// schedules/cpu_bwd_data.cpp) takes 2-D 3x3 filters with unit strides and dilations, and at
// least an AVX-512 vector of groups: kernel alone on a Xeon against nxg (float32, ms ratio
// nxg / nxg_ip; bench/RESULTS.md, fifty-fourth session) mb_dw32_112 1.23x, mb_dw192_28
// 1.25x, mb_dw960_7 1.45x, 24 groups on 30x30 1.05x; its prototype (nxg unstaged, any
// filter) 1.10-1.22x at batch 1 and on odd sizes, AVX2 1.19-1.25x, but 0.89x with 8 groups,
// and 5x5 (0.50-0.79x) and 7x7 filters (0.71x), which stay on nxg.
constexpr int64_t kInPlaceMinGroupBytes = 64;

// The Winograd kernels (nxc_wg, ncx_wg, generators/winograd.h) hold 36 x C_in x C_out values per
// group (the data gradient's transformed filter, which every block of tiles reads; the filter
// gradient's sums): past this many bytes (rn50's 7x7 layer, 512 x 512 channels: 38 MB, more
// than the L3) the data gradient's products waited on memory (prototype: 34 ms). And their
// 4x4 tiles cover dx (data) or dy (filter) rounded up to whole tiles: at most
// kWinogradMaxOvercompute times its positions (7x7 and 14x14 images compute 1.31x; 5x5
// would compute 2.56x). Kernel alone on a Xeon against the direct kernels (nxc, nxc_cs; ms
// ratio direct / Winograd; bench/RESULTS.md, fifty-sixth session): at 1.38x (17x17) the
// Winograd filter gradient ran 0.65x (96 channels, batch 4), 0.92x (256), 0.96x and 0.82x
// (96 and 128, batch 8), the data gradient 0.85x, 0.81x and 1.00x; at 1.37x (10x7, 64
// channels) 0.85x and 0.78x; at 1.44x (10x10) 0.65x and 0.63x; at 1.34x (13x11) 1.01x, at
// 1.31x (14x14, 256 channels) 1.04x, and at 1.19x (33x33, 96 channels) 1.12x and 1.43x.
// (F(4x4, 3x3): 4x4 tiles, 6x6 = 36 products per channel pair; generators/winograd.h.)
constexpr int kWinogradTile = 4;
constexpr int kWinogradProducts = (kWinogradTile + 2) * (kWinogradTile + 2);
constexpr int64_t kWinogradMaxFilterBytes = 16 << 20;
// The filter gradient's sums (36 x C_in x C_out) are zeroed, added to once per block of
// tiles and read by the final transform: a cost per sum, against products per sum and tile.
// It takes layers with at most kWinogradFilterSumBytesPerTile bytes of sums per tile of dy
// (all images), and at most kWinogradMaxFilterBytes. Kernel alone against the direct
// kernel (nxc), 256 x 256 channels (9.4 MB): 14x14 images, 128 tiles, 1.8x; 7x7, 32 tiles,
// 0.88x. 512 x 512 (38 MB): 14x14 1.2x, 7x7 0.44x. 128 x 128 at 28x28 (2.4 MB, 392
// tiles): 1.43x.
constexpr int64_t kWinogradFilterSumBytesPerTile = 128 << 10;
// On a Zen 5 (AMD family 26: full-rate 512-bit FMAs, where the Zen 4 issued them at half
// rate) the direct kernel keeps up on fewer tiles. Kernel alone (f32 NHWC, 256 x 256
// channels, 9.4 MB of sums; ms ratio Winograd / nxc, > 1: direct faster; bench/RESULTS.md,
// sixty-ninth session): 16x17 over 4 images (80 tiles, 118 KB a tile) 1.28-1.29x, its
// dilation phase (dl_3x3_d2's, every other pixel) 1.27-1.29x; 17x17 over 4 (100 tiles,
// 94 KB) 1.45x, its phase 1.30-1.43x; 28x28 over 2 (98 tiles, 96 KB) 1.06x; against 24x24
// over 3 (108 tiles, 87 KB) 0.96x, 14x14 over 8 (128 tiles, 73 KB, 1.31x the positions)
// 0.98-1.02x, 16x16 over 8 (128 tiles, 73 KB) 0.77x.
constexpr int64_t kWinogradFilterSumBytesPerTileZen5 = 90 << 10;
// The data gradient's transformed filter (36 x C_in x C_out) is read by every block of tiles:
// it takes layers with at most kWinogradDataFilterBytesPerTile bytes of it per tile of dx (all
// images). Kernel alone on a Xeon against nxc_cs (ms ratio direct / Winograd; bench/RESULTS.md,
// fifty-ninth session), 256 x 256 channels (9.4 MB): rn50_3x3_14 (128 tiles, 73 KB a tile)
// 0.87-0.96x; 16x16 at batch 4 (64 tiles) 0.92x; dl_3x3_d2's dilation phases (17x17, 17x16,
// 16x16 at batch 4: 94-147 KB) 0.81x, 0.93x, 0.92x; a 28x28 phase at batch 4 (196 tiles,
// 48 KB) 1.14x. 128 x 128 on 14x14 at batch 8 (18 KB) 1.02x; 64 x 64 on a 28x28 phase (1.5
// KB) 2.04x.
constexpr int64_t kWinogradDataFilterBytesPerTile = 64 << 10;
// On a Zen 5 the Winograd data gradient paid on more transformed filter a tile over many
// tiles (at least kWinogradDataMinTilesZen5, all images). Kernel alone (ms ratio nxc_cs /
// nxc_wg, both orders; bench/RESULTS.md, sixty-ninth session): 256 x 256 channels over 128
// tiles (73 KB a tile) 16x16 at batch 8 1.13-1.40x, rn50_3x3_14 1.15-2.0x (its time bimodal
// with the VM's phase: the 9.4 MB transformed filter in this VM's share of the L3 or not;
// in the suite 1.17x and 2.0x), 24x24 over 3 images (108 tiles, 87 KB) 1.16-1.23x. On fewer
// tiles mixed: 128 channels on 7x7 at batch 8 (32 tiles, 73 KB) 0.49-0.51x, 256 on 14x14
// at batch 4 (64 tiles, 147 KB) 0.86-0.88x, 16x16 at batch 4 1.15x once. (Under 64 KB, as
// everywhere, 128 channels on 7x7 at batch 16, 64 tiles, 0.70-0.72x: not changed here.)
// dl_3x3_d2's phases hold 64-100 tiles: with its 17x17 phase (100) on Winograd and the
// others direct, its data gradient ran 0.95x of the dilated nxc_cs (three suite runs).
// And images (slices) of at least kWinogradDataMinSliceTilesZen5 tiles: on 7x7 images (4
// tiles, each past the edge) Winograd lost at any batch, 256 channels over 32 images (128
// tiles, 73 KB) 0.79-0.82x, 64 channels 0.77-0.82x.
constexpr int64_t kWinogradDataFilterBytesPerTileZen5 = 160 << 10;
constexpr int64_t kWinogradDataMinTilesZen5 = 104;
constexpr int64_t kWinogradDataMinSliceTilesZen5 = 16;
// And on a Zen 5, on images (slices) of fewer tiles than that, the data gradient takes
// Winograd only where its tiles cover at most kWinogradDataMaxSmallSliceOvercomputeZen5 times
// the positions (under any bound on bytes). Kernel alone (ms ratio nxc_cs / nxc_wg, both
// orders; bench/RESULTS.md, seventieth session): 7x7 images (1.31x) lost, 64 channels over 8
// images 0.47-0.48x (NCHW, ncx_cs / ncx_wg, 0.61-0.64x), over 32 0.79-0.80x, 128 channels
// over 16 0.75-0.94x; 11x11 (1.19x) won 1.13-1.14x and 8x8 (whole tiles) 1.30-1.74x, 128
// channels over 16 images; 14x14 (16 tiles, 1.31x) 1.38-1.42x, 128 channels over 8.
constexpr double kWinogradDataMaxSmallSliceOvercomputeZen5 = 1.25;
// On 3-D layers the data gradient keeps this many slices of dy's transformed tiles per block
// (schedules/cpu_winograd.cpp: the storage folded along depth), so both gradients take at
// most this many depth taps (generators/winograd.h's kWinogradMaxDepthTaps).
constexpr int64_t kWinogradMaxDepthTaps = 4;
constexpr double kWinogradMaxOvercompute = 1.35;
// The dilation phases' views along x (every d-th pixel) keep the earlier bound: over them the direct
// kernels slow down more than Winograd's transforms (a 17x17 phase of dl_3x3_d2, 256
// channels: the direct filter gradient 5.3 ms contiguous, 8.7-9.5 strided, Winograd 8.0-8.3;
// the suite's dl_3x3_d2 filter gradient ran 0.82x with its 17x17 phase direct).
constexpr double kWinogradMaxPhaseOvercompute = 1.5;

// Where a call runs: the device, and for CUDA the device's compute capability; and whether
// it takes direct sums only (no Winograd): a 16-bit problem run on the float32 kernels
// (execute.cpp: run_widened), whose precision bound, a 16-bit rounding of float32 direct
// sums, Winograd's transforms (rounding differently, as float64 leaves them out) can exceed
// near cancellations; an int32 one on the float64 kernels, whose sums must stay exact.
struct Placement {
    Device device = Device::kCpu;
    int cuda_capability = 0;  // major * 10 + minor
    bool direct_sums_only = false;
};

struct KernelEntry {
    const char *name;
    const char *layout;  // "nxg_s2", "ncg_s2_px", ..., "nxc_sg", "ncx_px", "ncx", "any" (kernel_variant.h)
    Direction direction;
    DType dtype;
    LayoutRequirement needs;
    KernelFn fn;
    Device device = Device::kCpu;  // kCpu, kCuda or kOpenCL
    int capability = 0;            // CUDA: the PTX's compute capability (major * 10 + minor)
    bool jit = false;              // fn is a JIT kernel specialised to one problem
    bool from_avx2 = false;        // x86: built without the SSE4.1 body, AVX2 its fallback (the
                                   // refinements that lose there, and float64's;
                                   // generators/CMakeLists.txt): taken only where the kernels
                                   // run AVX2 or better (cpu_takes_avx2)

    // The predicate: same direction, dtype and device (CUDA: PTX no newer than the GPU), a
    // body for this CPU's path, and every activation view contiguous where this kernel
    // vectorises (filters are never constrained: kernels pack them).
    bool accepts(Direction d, const ConvProblem &p, const CanonicalView &act0, const CanonicalView &act1,
                 const Placement &where) const;
};

const std::vector<KernelEntry> &kernel_table();

// Whether the table holds kernels of this direction and dtype for the device.
bool has_kernels(Direction d, DType t, Device device);

// First accepting entry, or nullptr.
const KernelEntry *select_entry(Direction d, const ConvProblem &p, const CanonicalView &act0,
                                const CanonicalView &act1, const Placement &where);

}  // namespace convgrad
