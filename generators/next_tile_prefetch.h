// Software prefetch of dy ahead of the dense filter gradient's tiles (NXC, and NCX's
// dy-broadcast ncx_db) where dy streams from memory.
//
// Within a thread's chunk of rows the tiles run ci block by ci block, every co block in turn
// (schedules/cpu_bwd_weights.cpp), so the first ci block's tiles (of the first tap) are the
// first to touch the chunk's dy: each took its co block's lines from memory as fast as its
// FMAs consume them, faster than memory delivers (NHWC rn50_1x1_56: 25.7 MB of dy, 64 FMAs
// per value; tiles 4.9 ms, against 3.7 ms with its data in L3). Here each of those tiles
// prefetches, position by position, the lines the next co block's tile will read, so that
// tile finds them in L2 and the traffic overlaps a whole tile's FMAs. Kernel alone on the
// Zen 4, 2 threads, against the forty-first session's pass (each tile prefetching a share of
// the rows two chunks on): NHWC 128 -> 512 on 28x28 1.13-1.18x, rn50_1x1_56 0.99-1.06x; NCHW
// (ncx_db, which had none) rn50_1x1_56 1.13-1.15x, 128 -> 512 1.17x (bench/RESULTS.md,
// forty-second session). Only where `on` holds (dy of kStreamingDyMinBytes or more): where dy
// stays in cache the prefetches are instructions for nothing (ncx_db, batch 2: 0.99x).
//
// The tile's loop over a row's positions (acc_intm.s1.r$x) reads, per position:
// - NXC: L lines of the pixel (vectors of its co block, channels contiguous); the next co
//   block's are the L lines after them: L prefetches a position.
// - ncx_db: one value of each of the co block's T channels (broadcasts; NCHW rows of a
//   channel contiguous), a line of each every `line` positions: one prefetch a position,
//   channel by channel (the same line line / T times in a row where T < line).
// The last co block prefetches past its pixel or channels: a prefetch never faults.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "Halide.h"
#include "x86_bitcode.h"

namespace convgrad::gen {

class NextTilePrefetch : public Halide::Internal::IRMutator {
public:
    explicit NextTilePrefetch(Halide::Expr on) : on_(std::move(on)) {}

private:
    using IRMutator::visit;
    Halide::Expr on_;
    std::vector<std::string> loops_;

    static constexpr const char *kOn = "convgrad_prefetch_on";

    static bool ends_with(const std::string &s, const std::string &t) {
        return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
    }
    static bool is_tile_nest(const std::string &loop) { return ends_with(loop, "acc_intm_in_acc$0.s0.g"); }

    // The tile's loads of dy, distinct, in order: NXC's dense vectors, or ncx_db's scalars.
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

    static Halide::Internal::Stmt prefetch(const Halide::Expr &index, int element) {
        using namespace Halide;
        using namespace Halide::Internal;
        return Evaluate::make(Call::make(Int(32), "convgrad_prefetch",
                                         {Variable::make(Handle(), "dy"), Halide::cast<int64_t>(index) * element},
                                         Call::Extern));
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
        if (!ends_with(op->name, "acc_intm.s1.r$x")) return plain;
        // The first ci block (and tap) of the tile loops: `first`.
        Expr first;
        for (const std::string &l : loops_) {
            for (const char *suffix : {".s0.ci.ci_o", ".s0.kx", ".s0.ky", ".s0.kz"}) {
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
            const Expr base = load->index.as<Ramp>()->base;
            for (int j = 0; j < lines; j++) {
                const Stmt p = prefetch(base + (lines + j) * line, element);
                fetches = fetches.defined() ? Block::make(fetches, p) : p;
            }
        } else {
            const Load *load = dy.scalars[0];  // channel 0 of the co block; the others a channel stride apart
            const int element = load->type.bytes(), line = 64 / element;
            const int tile = int(dy.scalars.size());
            const Expr k = x / std::max(1, line / tile);  // (k % tile)'s line (k / tile)
            const Expr c_stride = Variable::make(Int(32), "dy.stride.0");
            fetches = prefetch(substitute(op->name, (k / tile) * line, load->index) + (tile + k % tile) * c_stride, element);
        }
        const Stmt fetching = For::make(op->name, op->min, op->extent, op->for_type, op->device_api, Block::make(fetches, body));
        // (`on` at the tiles' outermost loop where there is one, not at the pipeline's top:
        // the buffer symbols it uses are defined inside it.)
        const bool nested = std::any_of(loops_.begin(), loops_.end(), is_tile_nest);
        return IfThenElse::make((nested ? Variable::make(Bool(), kOn) : on_) && first, fetching, plain);
    }
};

// Prefetches the next co block's dy in the dense filter gradient's first tiles over each
// chunk where `on` holds, on x86 CPU targets (the prefetch is x86_bitcode.h's), after the
// lowering passes already added.
inline void add_next_tile_prefetch(Halide::Pipeline p, const Halide::Target &t,
                                   Halide::GeneratorContext::ExternsMap &externs, const Halide::Expr &on) {
    if (t.arch != Halide::Target::X86 || t.has_gpu_feature()) return;
    link_x86_bitcode(t, externs);
    p.add_custom_lowering_pass(new NextTilePrefetch(on));
}

}  // namespace convgrad::gen
