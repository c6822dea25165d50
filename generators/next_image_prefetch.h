// Software prefetch of the next image's dy in nxg_gt (NHWC depthwise filter gradients on
// small planes, a task per block of groups: schedules/cpu_bwd_weights.cpp). A task's tiles
// read one or two lines of each of dy's pixels in place, pixels 768 B-4 KB apart on
// MobileNet's 192-960-channel layers: an Intel core's stride prefetcher fetches one
// access ahead at most (and follows strides up to 2 KB only), and one line per 4 KB page
// gives its L2 streamer nothing to stream, so each line came from L3 as the FMAs waited on
// it. Each vector load of dy in the tiles here first prefetches the same lines of the next
// image (one image stride on) into L2 (the helper of x86_bitcode.h: prefetcht2), a whole
// image's FMAs ahead. Kernel alone on a Xeon (bench/RESULTS.md, fifty-third session):
// mb_dw960_7 1.29-1.31x, mb_dw576s2_14 1.10-1.14x, mb_dw192_28 1.06-1.21x. (The next
// image's x prefetched in the copy into x_in as well: no further gain here, 0.91x on a Zen 5
// (fifty-second session), where dy's alone measured 1.03x; into L1, prefetcht0: 0.84-0.95x
// of L2.) The last image prefetches past dy: a prefetch never faults.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "Halide.h"
#include "x86_bitcode.h"

namespace convgrad::gen {

class NextImagePrefetch : public Halide::Internal::IRMutator {
public:
    explicit NextImagePrefetch(int element_bytes) : element_(element_bytes) {}

private:
    using IRMutator::visit;
    int element_;
    // The lines already prefetched in this iteration of each enclosing loop (a tile's taps
    // all read the same dy vector).
    std::vector<std::vector<Halide::Expr>> seen_{{}};

    // The first element of each line that dense vector loads of dy in a statement read (a
    // line read twice listed twice: visit(Store) prefetches it once).
    struct DyLines : public Halide::Internal::IRVisitor {
        explicit DyLines(int e) : element(e) {}
        int element;
        std::vector<Halide::Expr> firsts;
        using IRVisitor::visit;
        void visit(const Halide::Internal::Load *op) override {
            using namespace Halide::Internal;
            const Ramp *ramp = op->index.as<Ramp>();
            if (op->name == "dy" && ramp && is_const_one(ramp->stride)) {
                const int line = 64 / element;
                for (int j = 0; j * line < ramp->lanes; j++) firsts.push_back(simplify(ramp->base + j * line));
            }
            IRVisitor::visit(op);
        }
    };

    // The tiles' sums into acc (its update): the next image's lines of the dy they read, each
    // once per iteration of the innermost loop around them, then the store.
    Halide::Internal::Stmt visit(const Halide::Internal::Store *op) override {
        using namespace Halide;
        using namespace Halide::Internal;
        if (op->name != "acc") return op;
        DyLines lines(element_);
        op->value.accept(&lines);
        const Expr image = Variable::make(Int(32), "dy.stride.5");
        std::vector<Stmt> fetches;
        for (const Expr &first : lines.firsts) {
            std::vector<Expr> &seen = seen_.back();
            if (std::any_of(seen.begin(), seen.end(), [&](const Expr &e) { return equal(e, first); })) continue;
            seen.push_back(first);
            fetches.push_back(x86_prefetch("dy", first + image, element_));
        }
        fetches.push_back(op);
        return Block::make(fetches);
    }

    Halide::Internal::Stmt visit(const Halide::Internal::For *op) override {
        seen_.emplace_back();
        Halide::Internal::Stmt s = IRMutator::visit(op);
        seen_.pop_back();
        return s;
    }
};

// nxg_gt's prefetch of the next image's dy, on x86 CPU targets (the prefetch is
// x86_bitcode.h's), after the lowering passes already added.
inline void add_next_image_prefetch(Halide::Pipeline p, const Halide::Target &t,
                                    Halide::GeneratorContext::ExternsMap &externs, int element_bytes) {
    if (t.arch != Halide::Target::X86 || t.has_gpu_feature()) return;
    link_x86_bitcode(t, externs);
    p.add_custom_lowering_pass(new NextImagePrefetch(element_bytes));
}

}  // namespace convgrad::gen
