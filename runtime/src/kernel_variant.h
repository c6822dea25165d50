// Kernel variant names and the generator params they stand for, shared by the AOT build's
// CMake (generators/CMakeLists.txt spells the same rule), the JIT and `convgrad aot`.
// A variant is a layout with optional suffixes: `_s2` (the data gradient's x-phase view for
// stride 2 along x) and `_px` (vectors of pixels along x: few input channels in NXC, rows
// in channels-first layouts), in that order, or `_sg` (the data gradient's NXC variant for
// small groups), or `_cs` (the data gradient's channel slabs: the filter packed in slabs of
// the tile's width), or `_pw` (the data gradient's pointwise tiles that read dy in place:
// `nxc_pw`, `ncx_px_pw`; the filter gradient's `_sg`, `nxc_sg` and `ncx_sg`, is its tiles over pairs of small groups), or `_db` (the filter gradient's channels-first tiles that broadcast dy
// in place), or `_sd` (the filter gradient's NHWC depthwise tiles over dy staged per chunk), or `_wr` (the
// filter gradient's NHWC tiles over the whole reduction, stored into dw), or `_ip` (the
// data gradient's NHWC depthwise 3x3 tiles that read dy in place), or `_xp` (the
// filter gradient's dense tiles on x staged as it is, without blocks of the tile's channels), or `_fp` (depthwise channels-first planes seen flat, as one row each), or `_wg`
// (Winograd F(4x4, 3x3) tiles, both directions, generators/winograd.h):
// "nxc_s2_px" is layout=nxc x_phases=2 pixel_vectors=true, "nxc_sg" is layout=nxc
// small_groups=true, "ncx_cs" is layout=ncx channel_slabs=true, "nxc_pw" is layout=nxc
// pointwise=true, "ncg_fp" is layout=ncg flat_planes=true, "nxc_wg" is layout=nxc winograd=true.
#pragma once

#include <string>
#include <vector>

namespace convgrad {

struct KernelVariant {
    std::string layout;  // nxc, nxg, ncx, ncg, any
    bool x_phases = false;
    bool pixel_vectors = false;
    bool small_groups = false;
    bool channel_slabs = false;
    bool pointwise = false;
    bool dy_broadcasts = false;
    bool staged_dy = false;
    bool flat_planes = false;
    bool plain_x = false;
    bool group_tasks = false;
    bool whole_reduction = false;
    bool dy_in_place = false;
    bool winograd = false;

    static KernelVariant parse(std::string name) {
        KernelVariant v;
        const auto strip = [&](const char *suffix) {
            const std::string s = suffix;
            if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
                name.resize(name.size() - s.size());
                return true;
            }
            return false;
        };
        v.winograd = strip("_wg");
        v.small_groups = strip("_sg");
        v.channel_slabs = strip("_cs");
        v.pointwise = strip("_pw");
        v.dy_broadcasts = strip("_db");
        v.staged_dy = strip("_sd");
        v.plain_x = strip("_xp");
        v.group_tasks = strip("_gt");
        v.whole_reduction = strip("_wr");
        v.dy_in_place = strip("_ip");
        v.flat_planes = strip("_fp");
        v.pixel_vectors = strip("_px");
        v.x_phases = strip("_s2");
        v.layout = name;
        return v;
    }

    // A refinement: a variant that serves some of its layout's problems faster (every suffix
    // but the x-phase view, `_s2`, which every dtype has). Built for the native float types
    // only (generators/CMakeLists.txt spells the same rule, and there picks the x86 ones
    // built without an SSE4.1 body).
    bool refinement() const {
        return pixel_vectors || small_groups || channel_slabs || pointwise || dy_broadcasts || staged_dy || plain_x ||
               group_tasks || whole_reduction || dy_in_place || flat_planes || winograd;
    }

    // The generator params (`key=value`) after dtype; both generators take small_groups,
    // winograd and flat_planes, only the data gradient's takes x_phases, channel_slabs,
    // pointwise, dy_in_place and pixel_vectors, only the filter gradient's dy_broadcasts,
    // staged_dy, plain_x, group_tasks and whole_reduction.
    std::vector<std::string> generator_params(bool data) const {
        std::vector<std::string> out = {"layout=" + layout};
        if (data) out.push_back(std::string("x_phases=") + (x_phases ? "2" : "1"));
        out.push_back(std::string("small_groups=") + (small_groups ? "true" : "false"));
        if (data) out.push_back(std::string("channel_slabs=") + (channel_slabs ? "true" : "false"));
        if (data) out.push_back(std::string("pointwise=") + (pointwise ? "true" : "false"));
        if (data) out.push_back(std::string("dy_in_place=") + (dy_in_place ? "true" : "false"));
        out.push_back(std::string("winograd=") + (winograd ? "true" : "false"));
        if (!data) out.push_back(std::string("dy_broadcasts=") + (dy_broadcasts ? "true" : "false"));
        if (!data) out.push_back(std::string("staged_dy=") + (staged_dy ? "true" : "false"));
        if (!data) out.push_back(std::string("plain_x=") + (plain_x ? "true" : "false"));
        if (!data) out.push_back(std::string("group_tasks=") + (group_tasks ? "true" : "false"));
        if (!data) out.push_back(std::string("whole_reduction=") + (whole_reduction ? "true" : "false"));
        if (data) out.push_back(std::string("pixel_vectors=") + (pixel_vectors ? "true" : "false"));
        out.push_back(std::string("flat_planes=") + (flat_planes ? "true" : "false"));
        return out;
    }
};

// The kernel variants of one (direction, dtype) for the given layouts, in dispatch order
// whatever order the layouts come in: the data gradient's stride-2 variants first, depthwise
// before dense, Winograd, flat-plane, pixel-vector, pointwise, small-group, channel-slab, plain-x, group-task and in-place variants before the layout they refine
// (built for the dtypes with native float arithmetic, f32 and f64, as in
// generators/CMakeLists.txt; float64, kept exact, without Winograd, and without the plain-x,
// staged-dy, small-group, whole-reduction and depthwise in-place variants), the generic `any` last.
// dtype: "f32", "f64", "f16", "bf16" or "i32".
inline std::vector<std::string> kernel_variants(const std::vector<std::string> &layouts, bool data, const std::string &dtype) {
    const bool native_floats = dtype == "f32" || dtype == "f64";
    const auto has = [&](const char *l) {
        for (const auto &x : layouts) {
            if (x == l) return true;
        }
        return false;
    };
    std::vector<std::string> order;
    if (data) order = {"nxg_s2", "ncg_s2_px", "nxc_s2_px", "ncx_s2_px", "nxc_s2", "nxg_ip", "nxg", "ncg_fp", "ncg", "nxc_wg", "nxc_px", "nxc_pw", "nxc_sg", "nxc_cs", "nxc", "ncx_wg", "ncx_px_pw", "ncx_px", "ncx_cs", "ncx", "any"};
    else order = {"nxg_gt", "nxg_xp", "nxg_sd", "nxg", "ncg_fp", "ncg", "nxc_wg", "nxc_sg", "nxc_wr", "nxc_xp", "nxc", "ncx_wg", "ncx_sg", "ncx_db", "ncx_xp", "ncx", "any"};
    std::vector<std::string> out;
    for (const auto &v : order) {
        const KernelVariant k = KernelVariant::parse(v);
        const bool refinement = k.refinement();
        const bool not_for_f64 = k.winograd || k.small_groups || k.plain_x || k.staged_dy || k.dy_in_place || k.whole_reduction;
        if (!has(k.layout.c_str()) || (refinement && !native_floats) || (dtype == "f64" && not_for_f64)) continue;
        out.push_back(v);
    }
    return out;
}

}  // namespace convgrad
