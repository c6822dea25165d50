// Software prefetch of dy ahead of the tiles that read it in place where it streams from
// memory: the dense filter gradient's (NXC, and NCX's dy-broadcast ncx_db) and the pointwise
// data gradient's (nxc_pw, ncx_px_pw).
//
// Filter gradient: within a thread's chunk of rows the tiles run ci block by ci block, every
// co block in turn (schedules/cpu_bwd_weights.cpp), so the first ci block's tiles (of the
// first tap) are the first to touch the chunk's dy: each took its co block's lines from
// memory as fast as its FMAs consume them, faster than memory delivers (NHWC rn50_1x1_56:
// 25.7 MB of dy, 64 FMAs per value; tiles 4.9 ms, against 3.7 ms with its data in L3).
// Pointwise data gradient: the same with blocks of pixels for co blocks and dx channel
// blocks for ci blocks (schedules/cpu_bwd_data*.cpp). Here each of those first tiles
// prefetches, step by step, the lines the next tile will read, so that tile finds them in
// L2 and the traffic overlaps a whole tile's FMAs. Kernel alone on the Zen 4, 2 threads
// (bench/RESULTS.md, forty-second session): filter gradients against the forty-first
// session's pass (each tile prefetching a share of the rows two chunks on), NHWC 128 -> 512
// on 28x28 1.14-1.18x, rn50_1x1_56 1.00-1.01x; NCHW (ncx_db, which had none) rn50_1x1_56
// 1.13-1.14x, 128 -> 512 1.12-1.15x; data gradients (none before) rn50_1x1_56 NHWC 1.09-1.10x,
// NCHW 1.12-1.15x, 512 -> 128 on 28x28 NHWC 1.02x, NCHW 0.97-0.99x. Only where dy is
// kStreamingDyMinBytes or more: where dy stays in cache the prefetches are instructions for
// nothing (ncx_db, batch 2: 0.99x).
//
// A tile's loop over its reduction (TileLoops::positions) reads, per step:
// - vectors (NXC filter gradient: its co block of a pixel; ncx_px_pw: its block of a row's
//   pixels in one channel), L lines; the next tile's are the L lines after them: L
//   prefetches a step.
// - T scalars, TileLoops::scalar_stride apart (ncx_db: its co block's channels, each along
//   its NCHW row; nxc_pw: its pixels, each along its channels): a line of each every `line`
//   steps; the next tile's are the T after them: one prefetch a step, scalar by scalar (the
//   same line line / T times in a row where T < line).
// The last tile of a row or pixel prefetches past it: a prefetch never faults.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "Halide.h"
#include "canonical.h"
#include "streaming_sizes.h"
#include "x86_bitcode.h"

namespace convgrad::gen {

// Where a kernel's tiles are, by the names of Halide's loops (suffixes), and how their scalar
// loads of dy are spaced.
struct TileLoops {
    std::string positions;            // a tile's loop over its reduction, reading dy
    std::vector<std::string> firsts;  // the loops whose first iteration first touches dy
    std::string nest;                 // the outermost loop of the tiles (inside a thread's task)
    std::string scalar_stride;        // dy's stride from one of the tile's scalar loads to the next
};
// The filter gradient (nxc; ncx_db, dy's channels broadcast): tiles over a row's positions,
// first ci block and tap.
inline const TileLoops kFilterGradientTiles = {
    "acc_intm.s1.r$x", {".s0.ci.ci_o", ".s0.kx", ".s0.ky", ".s0.kz"}, "acc_intm_in_acc$0.s0.g", "dy.stride.0"};
// The pointwise data gradient (ncx_px_pw: vectors of a row's pixels; nxc_pw: dy's pixels
// broadcast): tiles over dy's channels, first block of dx channels.
inline const TileLoops kPointwiseDataGradientTiles = {"acc.s1.r$x", {".s0.c.c_o"}, "dx.s0.g", "dy.stride.1"};

class NextTilePrefetch : public Halide::Internal::IRMutator {
public:
    NextTilePrefetch(Halide::Expr on, TileLoops loops) : on_(std::move(on)), tiles_(std::move(loops)) {}

private:
    using IRMutator::visit;
    Halide::Expr on_;
    TileLoops tiles_;
    std::vector<std::string> loops_;

    static constexpr const char *kOn = "convgrad_prefetch_on";

    static bool ends_with(const std::string &s, const std::string &t) {
        return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
    }
    bool is_tile_nest(const std::string &loop) const { return ends_with(loop, tiles_.nest); }

    // The tile's loads of dy, distinct, in order: dense vectors (nxc, ncx_px_pw) or scalars
    // (ncx_db, nxc_pw).
    struct DyLoads : public Halide::Internal::IRVisitor {
        using IRVisitor::visit;
        std::vector<const Halide::Internal::Load *> vectors, scalars;
        void visit(const Halide::Internal::Load *op) override {
            using namespace Halide::Internal;
            const Ramp *ramp = op->index.as<Ramp>();
            if (op->name == "dy" && (op->type.is_scalar() || (ramp && is_const_one(ramp->stride)))) {
                auto &seen = op->type.is_scalar() ? scalars : vectors;
                if (std::none_of(seen.begin(), seen.end(), [&](const Load *l) { return equal(l->index, op->index); })) {
                    seen.push_back(op);
                }
            }
            IRVisitor::visit(op);
        }
    };

    // The lets in a loop's body, by name: a loop whose bounds Halide tightened (r$x.rebased)
    // indexes each statement through a let of its own (r$x.rebased + t).
    struct Lets : public Halide::Internal::IRVisitor {
        using IRVisitor::visit;
        std::map<std::string, Halide::Expr> values;
        void visit(const Halide::Internal::LetStmt *op) override {
            values[op->name] = op->value;
            IRVisitor::visit(op);
        }
    };

    // `e` with the lets of `body` that it uses (and theirs) substituted.
    static Halide::Expr without_lets(Halide::Expr e, const Halide::Internal::Stmt &body) {
        Lets lets;
        body.accept(&lets);
        for (size_t i = 0; i < lets.values.size(); i++) {
            const Halide::Expr next = Halide::Internal::substitute(lets.values, e);
            if (next.same_as(e)) break;
            e = next;
        }
        return e;
    }

    Halide::Internal::Stmt visit(const Halide::Internal::For *op) override {
        using namespace Halide;
        using namespace Halide::Internal;
        loops_.push_back(op->name);
        Stmt body = mutate(op->body);
        loops_.pop_back();
        const Stmt plain = body.same_as(op->body)
                               ? Stmt(op)
                               : For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
        // The tiles' outermost loop (over groups) computes `on` once for the tiles inside.
        if (is_tile_nest(op->name) && !body.same_as(op->body)) return LetStmt::make(kOn, on_, plain);
        // (Halide numbers a reduction's loops in specialisations: r$x_2, r$x_3, ...)
        std::string name = op->name;
        const size_t tail = name.find_last_not_of("0123456789");
        if (tail != std::string::npos && tail + 1 < name.size() && name[tail] == '_') name.resize(tail);
        // (and renames a loop whose bounds it tightened from a predicate: r$x.rebased)
        if (ends_with(name, ".rebased")) name.resize(name.size() - std::string(".rebased").size());
        if (!ends_with(name, tiles_.positions)) return plain;
        // The tiles that first touch dy: the first iteration of each of `firsts`' loops.
        Expr first;
        for (const std::string &l : loops_) {
            for (const std::string &suffix : tiles_.firsts) {
                if (!ends_with(l, suffix)) continue;
                const Expr at_zero = Variable::make(Int(32), l) == 0;
                first = first.defined() ? first && at_zero : at_zero;
            }
        }
        DyLoads dy;
        op->body.accept(&dy);
        if (!first.defined() || (dy.vectors.empty() == dy.scalars.empty())) return plain;
        const Expr x = Variable::make(Int(32), op->name);
        Stmt fetches;
        if (!dy.vectors.empty()) {
            const Load *load = dy.vectors[0];
            const int element = load->type.bytes(), line = 64 / element;  // (Type::bytes(): one element's)
            int bytes = 0;
            for (const Load *l : dy.vectors) bytes += l->type.bytes() * l->type.lanes();
            const int lines = std::max(1, bytes / 64);
            const Expr base = without_lets(load->index.as<Ramp>()->base, op->body);
            for (int j = 0; j < lines; j++) {
                const Stmt p = x86_prefetch("dy", base + (lines + j) * line, element);
                fetches = fetches.defined() ? Block::make(fetches, p) : p;
            }
        } else {
            const Load *load = dy.scalars[0];  // the first; the others scalar_stride apart
            const int element = load->type.bytes(), line = 64 / element;
            const int tile = int(dy.scalars.size());
            const Expr k = x / std::max(1, line / tile);  // (k % tile)'s line (k / tile)
            const Expr stride = Variable::make(Int(32), tiles_.scalar_stride);
            // (Clamped: where the loop's extent is not a multiple of the lines it covers.)
            const Expr position = Halide::min((k / tile) * line, op->extent - 1);
            fetches = x86_prefetch("dy", substitute(op->name, position, without_lets(load->index, op->body)) + (tile + k % tile) * stride, element);
        }
        const Stmt fetching = For::make(op->name, op->min, op->extent, op->for_type, op->device_api, Block::make(fetches, body));
        // (`on` at the tiles' outermost loop where there is one, not at the pipeline's top:
        // the buffer symbols it uses are defined inside it.)
        const bool nested = std::any_of(loops_.begin(), loops_.end(), [&](const std::string &l) { return is_tile_nest(l); });
        return IfThenElse::make((nested ? Variable::make(Bool(), kOn) : on_) && first, fetching, plain);
    }
};

// Prefetches the next tile's dy in the first tiles (`loops`) where dy, of `element_bytes`
// elements, streams from memory (kStreamingDyMinBytes or more), on x86 CPU targets (the
// prefetch is x86_bitcode.h's), after the lowering passes already added.
inline void add_next_tile_prefetch(Halide::Pipeline p, const Halide::Target &t,
                                   Halide::GeneratorContext::ExternsMap &externs, int element_bytes,
                                   const TileLoops &loops) {
    using namespace Halide::Internal;
    if (t.arch != Halide::Target::X86 || t.has_gpu_feature()) return;
    // (Extents read from the buffer: dims the pipeline never reads have no symbol. In float:
    // the product overflows 32 bits on large tensors.)
    const Halide::Expr buffer = Variable::make(type_of<halide_buffer_t *>(), "dy.buffer");
    Halide::Expr bytes = float(element_bytes);
    for (int d = 0; d < canonical::kActDims; d++) {
        bytes *= Halide::cast<float>(Call::make(Halide::Int(32), Call::buffer_get_extent, {buffer, d}, Call::Extern));
    }
    link_x86_bitcode(t, externs);
    p.add_custom_lowering_pass(new NextTilePrefetch(bytes >= float(kStreamingDyMinBytes), loops));
}

}  // namespace convgrad::gen
