// Streaming (non-temporal) stores of a large output, on x86.
//
// A plain store of a line that is not in cache first reads it from memory (read for
// ownership), so a kernel that writes an output larger than the caches moves it twice. On
// the 2-core EPYC (Zen 1), two threads copy 64 MB in 9.9 ms with plain stores and 5.9 ms
// with streaming ones (bench/RESULTS.md, thirty-fifth session); the NHWC depthwise data
// gradients, whose dx is as large as their dy and which do 9 FMAs per value, ran 1.22-1.32x
// faster with them (kernel alone: mb_dw32_112, mb_dw144_56, mb_dw192_28).
//
// The data gradients of channels-last layouts (NXC, NXG: bwd_data_generator.cpp) use it.
// Channels first, dx is written by rows that share lines, in pieces at different times:
// streamed, those became partial-line writes to memory (NCHW rx_g32_28 1.35x slower).
//
// Halide 14 has no such store. This lowering pass replaces each whole-vector store into the
// output (`buffer`, lanes contiguous, no predicate, f32 or f64 of a width the bitcode has)
// by a call to convgrad_stream_<type>x<lanes> (streaming_stores.ll.in, x86_bitcode.h), which
// Halide links into the kernel as LLVM bitcode (ExternalCode) and LLVM inlines: a streaming store where
// `on` holds and the address is aligned to the vector, else the plain store. Each parallel
// task, and the pipeline, ends with an sfence so the stores are visible to the thread that
// waits for the task. Masked stores (a vector's tail) stay as they are.
//
// `on`: the output is at least kStreamingMinBytes. A smaller output may still be in cache
// when the next operation reads it (the caller's), which streaming would send to memory.
#pragma once

#include <cstdint>
#include <string>

#include "Halide.h"
#include "x86_bitcode.h"

namespace convgrad::gen {

// Outputs from this size on are written with streaming stores: half the 8 MB L3 of the
// EPYC, where an output of 4.8 MB whose input is as large already missed the cache on
// each call (mb_dw192_28: 1.22x kernel alone).
constexpr int64_t kStreamingMinBytes = int64_t(4) << 20;

class StreamingStores : public Halide::Internal::IRMutator {
public:
    StreamingStores(std::string buffer, Halide::Expr on) : buffer_(std::move(buffer)), on_(std::move(on)) {}

    using IRMutator::mutate;
    // The whole pipeline (the pass's entry): `on` computed once, a final sfence.
    Halide::Internal::Stmt mutate(const Halide::Internal::Stmt &s) override {
        using namespace Halide::Internal;
        if (entered_) return IRMutator::mutate(s);
        entered_ = true;
        Stmt body = IRMutator::mutate(s);
        entered_ = false;
        if (!streamed_) return s;
        return LetStmt::make(kOn, Halide::cast<int>(on_), Block::make(body, sfence()));
    }

private:
    using IRMutator::visit;
    static constexpr const char *kOn = "convgrad.streaming.on";
    std::string buffer_;
    Halide::Expr on_;
    bool entered_ = false, streamed_ = false;

    static Halide::Internal::Stmt sfence() {
        using namespace Halide::Internal;
        return Evaluate::make(Call::make(Halide::Int(32), "convgrad_sfence", {}, Call::Extern));
    }

    Halide::Internal::Stmt visit(const Halide::Internal::For *op) override {
        using namespace Halide::Internal;
        const bool outer = streamed_;
        streamed_ = false;
        Stmt body = mutate(op->body);
        const bool inner = streamed_;
        streamed_ = outer || inner;
        if (body.same_as(op->body)) return op;
        if (inner && op->for_type == ForType::Parallel) body = Block::make(body, sfence());
        return For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
    }

    Halide::Internal::Stmt visit(const Halide::Internal::Store *op) override {
        using namespace Halide;
        using namespace Halide::Internal;
        const Ramp *r = op->index.as<Ramp>();
        const Type t = op->value.type();
        const int vector_bytes = t.bytes() * t.lanes();  // (Type::bytes() is one element's)
        // The bitcode has a function per f32/f64 vector of 16, 32 or 64 bytes (SSE, AVX, AVX-512).
        const bool has_function = t.is_float() && (t.bits() == 32 || t.bits() == 64) &&
                                  (vector_bytes == 16 || vector_bytes == 32 || vector_bytes == 64);
        if (op->name != buffer_ || !is_const_one(op->predicate) || !r || !is_const_one(r->stride) ||
            r->base.type() != Int(32) || !has_function) {
            return IRMutator::visit(op);
        }
        streamed_ = true;
        const std::string fn = "convgrad_stream_f" + std::to_string(t.bits()) + "x" + std::to_string(t.lanes());
        const Expr host = Variable::make(Handle(), op->name);  // the buffer's host pointer
        // The address bits that must be clear to stream: the vector's alignment where the
        // output is large, all of them (never) where it is not. (LLVM hoists the select.)
        const Expr misaligned = select(Variable::make(Int(32), kOn) != 0, Expr(int64_t(vector_bytes - 1)), Expr(int64_t(-1)));
        return Evaluate::make(Call::make(Int(32), fn, {host, r->base, op->value, misaligned}, Call::Extern));
    }
};

// Streams the pipeline's output (its only one) where it is at least kStreamingMinBytes, on
// x86 CPU targets (the bitcode is x86's), after the lowering passes already added.
// `externs`: the generator's (get_externs_map()), which hands Halide the bitcode.
inline void add_streaming_stores(Halide::Pipeline p, const Halide::Target &t,
                                 Halide::GeneratorContext::ExternsMap &externs) {
    using namespace Halide;
    using namespace Halide::Internal;
    if (t.arch != Target::X86 || t.has_gpu_feature()) return;
    const Func out = p.outputs()[0];
    const OutputImageParam b = out.output_buffer();
    // The extents from the buffer itself: a dim whose extent the pipeline never reads (a
    // depthwise dx's channels, bound to 1) has no symbol of its own when the kernel is built.
    const Expr buffer = Variable::make(type_of<halide_buffer_t *>(), out.name() + ".buffer");
    Expr bytes = Expr(int64_t(b.type().bytes()));
    for (int d = 0; d < b.dimensions(); d++) {
        bytes *= cast<int64_t>(Call::make(Int(32), Call::buffer_get_extent, {buffer, d}, Call::Extern));
    }
    link_x86_bitcode(t, externs);
    p.add_custom_lowering_pass(new StreamingStores(out.name(), bytes >= Expr(kStreamingMinBytes)));
}

}  // namespace convgrad::gen
