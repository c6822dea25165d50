// Software prefetch of dy's rows ahead of the dense NHWC filter gradient's tiles, for
// pointwise layers whose dy streams from memory.
//
// The tiles (schedules/cpu_bwd_weights.cpp, NXC) sweep one cache-sized chunk of dy's rows
// per thread, every (ci block, co block) tile in turn, and the first tiles over a chunk take
// its rows from memory: a burst, several tiles long, at the rate the FMAs consume lines,
// which is more than memory delivers (NHWC rn50_1x1_56: its 25.7 MB of dy, 64 FMAs per
// value; tiles 4.9 ms, against 3.7 ms with its data in L3). This pass has each tile prefetch
// a share of the rows `ahead` rows on (the chunk its thread takes next: threads take chunks
// in turn, so two chunks on with two threads) while it works, one line per position: so the
// chunk's memory traffic spreads over all of its tiles. Kernel alone on the Zen 4, 2 threads,
// as built: rn50_1x1_56 1.08x, 128 -> 512 on 28x28 0.97-1.08x (bench/RESULTS.md, forty-first
// session). Unconditional, in every tile loop: rn50_1x1_56 1.09-1.12x (one chunk on: 1.00x;
// three: 1.08x; four: 1.06x), 256 -> 64 (dy the smaller activation) 1.01x, but the layers
// whose data stays in cache lost 3-5 % to the extra instructions (3x3 and stem layers), so
// the prefetching loops run only where `on` holds (pointwise, dy of kPrefetchMinDyBytes or
// more), the plain ones elsewhere.
//
// A tile's loop over a row's positions (acc_intm.s1.r$x, inside its ci block loop
// .s0.ci.ci_o) reads a slice of L lines of each dy pixel (its co block); the tiles of the
// row's kShare ci blocks split that slice's positions in the row `ahead` on, kShare
// iterations per position (L lines a position, the same line kShare / L times). With other
// numbers of ci blocks, some positions are left to the hardware (fewer) or prefetched twice
// (more). Prefetches never fault, so rows past dy's end cost nothing but the instruction.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "Halide.h"
#include "x86_bitcode.h"

namespace convgrad::gen {

// dy from this size on is prefetched: as the depthwise kernels' staged dy (runtime/src/kernel_registry.h,
// kStagedDyMinBytes), where dy no longer stays in the L3 between calls.
constexpr int64_t kPrefetchMinDyBytes = int64_t(8) << 20;

class NextChunkPrefetch : public Halide::Internal::IRMutator {
public:
    NextChunkPrefetch(Halide::Expr on, Halide::Expr ahead_rows) : on_(std::move(on)), ahead_(std::move(ahead_rows)) {}

private:
    using IRMutator::visit;
    static constexpr int kShare = 8;  // ci blocks that split a co block's slice (AVX-512 f32: 64 channels)
    Halide::Expr on_, ahead_;
    std::vector<std::string> loops_;

    static bool ends_with(const std::string &s, const std::string &t) {
        return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
    }

    // The tile's loads of dy (distinct vectors, in order) and whether any index uses a name
    // defined inside the loop (then a prefetch at the body's start could not use it).
    struct DyLoads : public Halide::Internal::IRVisitor {
        using IRVisitor::visit;
        std::vector<const Halide::Internal::Load *> loads;
        std::vector<std::string> inner_lets;
        void visit(const Halide::Internal::Load *op) override {
            using namespace Halide::Internal;
            if (op->name == "dy" && op->index.as<Ramp>() && is_const_one(op->index.as<Ramp>()->stride)) {
                bool seen = false;
                for (const Load *l : loads) seen = seen || equal(l->index, op->index);
                if (!seen) loads.push_back(op);
            }
            IRVisitor::visit(op);
        }
        void visit(const Halide::Internal::LetStmt *op) override {
            inner_lets.push_back(op->name);
            IRVisitor::visit(op);
        }
        void visit(const Halide::Internal::Let *op) override {
            inner_lets.push_back(op->name);
            IRVisitor::visit(op);
        }
    };

    Halide::Internal::Stmt visit(const Halide::Internal::For *op) override {
        using namespace Halide;
        using namespace Halide::Internal;
        loops_.push_back(op->name);
        Stmt body = mutate(op->body);
        loops_.pop_back();
        const Stmt plain = body.same_as(op->body)
                               ? Stmt(op)
                               : For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
        if (!ends_with(op->name, "acc_intm.s1.r$x")) return plain;
        std::string ci_block;
        for (const std::string &l : loops_) {
            if (ends_with(l, ".s0.ci.ci_o")) ci_block = l;
        }
        DyLoads dy;
        op->body.accept(&dy);
        if (ci_block.empty() || dy.loads.empty()) return plain;
        const Expr base = dy.loads[0]->index.as<Ramp>()->base;
        for (const std::string &name : dy.inner_lets) {
            if (expr_uses_var(base, name)) return plain;
        }
        const Type t = dy.loads[0]->type;
        const int element = t.bytes(), line = 64 / element;  // (Type::bytes() is one element's)
        int bytes = 0;
        for (const Load *l : dy.loads) bytes += l->type.bytes() * l->type.lanes();
        const int lines = std::max(1, bytes / 64);  // L: the tile's lines of each pixel
        // The row `ahead` on: the tile's slice of its positions (ci_block % kShare) * W / kShare
        // on, one every kShare iterations, its L lines in turn.
        const Expr x = Variable::make(Int(32), op->name);
        const Expr block = Variable::make(Int(32), ci_block) % kShare;
        const Expr dy_x = Variable::make(Int(32), "dy.stride.1"), dy_y = Variable::make(Int(32), "dy.stride.2");
        const Expr row = simplify(substitute(op->name, 0, base)) + ahead_ * dy_y;
        const Expr position = block * (op->extent / kShare) + x / kShare;
        const Expr index = row + position * dy_x + ((x / std::max(1, kShare / lines)) % lines) * line;
        const Stmt prefetch = Evaluate::make(Call::make(
            Int(32), "convgrad_prefetch", {Variable::make(Handle(), "dy"), Halide::cast<int64_t>(index) * element},
            Call::Extern));
        const Stmt fetching = For::make(op->name, op->min, op->extent, op->for_type, op->device_api, Block::make(prefetch, body));
        // (`on` and `ahead` in place, not lets at the pipeline's top: the buffer symbols they
        // use are defined inside it.)
        return IfThenElse::make(on_, fetching, plain);
    }
};

// Prefetches dy `ahead_rows` rows on in the NXC filter gradient's tiles where `on` holds, on
// x86 CPU targets (the prefetch is x86_bitcode.h's), after the lowering passes already added.
inline void add_next_chunk_prefetch(Halide::Pipeline p, const Halide::Target &t,
                                    Halide::GeneratorContext::ExternsMap &externs, const Halide::Expr &on,
                                    const Halide::Expr &ahead_rows) {
    if (t.arch != Halide::Target::X86 || t.has_gpu_feature()) return;
    link_x86_bitcode(t, externs);
    p.add_custom_lowering_pass(new NextChunkPrefetch(on, ahead_rows));
}

}  // namespace convgrad::gen
