// A lowering pass for the transposing copies that the CPU schedules stage in cache
// (schedules/cpu_staging.h: the ncg kernels' blocks of planes). Such a copy is a loop over
// positions p whose body stores one vector of L lanes, lane j read from plane j:
//
//   for p: out[ramp(Bs(p), 1, L)] = in[ramp(Bl(p), S, L)]      (Bl(p + 1) = Bl(p) + 1)
//
// Halide 14 builds each strided load from L scalar loads and L inserts; on 7x7 planes those
// were the top of the profile. The pass rewrites the loop over chunks of 8 positions:
// per chunk, L contiguous loads of 8 positions, one per plane, and 8 stores of shuffles of
// them, so LLVM emits permutes across registers instead of a load and an insert per
// element. Whole chunks load whole vectors; only a last partial chunk masks its loads and
// guards its stores. Other loops are left alone. (The border's stores: see visit(Store).)
#pragma once

#include <string>
#include <vector>

#include "Halide.h"

namespace convgrad::gen {

class TransposedRows : public Halide::Internal::IRMutator {
    using IRMutator::visit;

    static constexpr int kChunk = 8;  // positions per chunk: a row of 7-9 is one or two

    // A store of select(c, 0, v) or select(c, v, 0) with a scalar c (a copy's border: zeros
    // or the element, per position) becomes a branch: LLVM evaluates both sides of a
    // select, so every border vector of zeros still paid for its clamped gather. (Only
    // selects with a zero side: the tiles' other scalar selects as branches ran a 5x5 data
    // gradient on 7x7 planes 0.68x.)
    Halide::Internal::Stmt visit(const Halide::Internal::Store *op) override {
        using namespace Halide::Internal;
        const Select *sel = op->value.as<Select>();
        if (!sel || !sel->condition.type().is_scalar() || !is_const_one(op->predicate) ||
            !(is_const_zero(sel->true_value) || is_const_zero(sel->false_value))) {
            return IRMutator::visit(op);
        }
        const auto store = [&](const Halide::Expr &v) {
            return Store::make(op->name, v, op->index, op->param, op->predicate, op->alignment);
        };
        return IfThenElse::make(sel->condition, store(sel->true_value), store(sel->false_value));
    }

    Halide::Internal::Stmt visit(const Halide::Internal::For *op) override {
        using namespace Halide;
        using namespace Halide::Internal;
        const Store *st = op->body.as<Store>();
        const Load *ld = st ? st->value.as<Load>() : nullptr;
        if (op->for_type != ForType::Serial || !ld || !is_const_one(st->predicate) || !is_const_one(ld->predicate)) {
            return IRMutator::visit(op);
        }
        const Ramp *sr = st->index.as<Ramp>(), *lr = ld->index.as<Ramp>();
        const int lanes = ld->type.lanes();
        // (A constant stride of a chunk or more: a block's staged copy, as dx_local in the
        // ncg data gradient; narrower constant strides are interleaved data Halide handles.)
        if (!sr || !lr || !is_const_one(sr->stride) || (is_const(lr->stride) && !can_prove(lr->stride >= kChunk)) ||
            lanes < 2 || lanes > 16 ||
            ld->type.bits() != 32 || sr->base.type().is_vector() || lr->base.type().is_vector()) {
            return IRMutator::visit(op);
        }
        // Consecutive positions read consecutive elements of every plane.
        const Expr p = Variable::make(Int(32), op->name);
        if (!is_const_one(simplify(substitute(op->name, p + 1, lr->base) - lr->base))) {
            return IRMutator::visit(op);
        }
        const std::string chunk_name = op->name + ".chunk", p0_name = op->name + ".p0";
        const Expr chunk = Variable::make(Int(32), chunk_name);
        const Expr p0 = Variable::make(Int(32), p0_name);
        const Expr row0 = substitute(op->name, p0, lr->base);
        // One chunk at p0: `valid` positions (a constant kChunk: whole loads and stores).
        const auto chunk_body = [&](const Expr &valid) {
            const bool whole = is_const(valid, kChunk);
            const Type row_type = ld->type.with_lanes(kChunk);
            std::vector<Expr> rows;
            std::vector<std::string> row_names;
            for (int j = 0; j < lanes; j++) {
                row_names.push_back(op->name + ".row" + std::to_string(j));
                rows.push_back(Variable::make(row_type, row_names.back()));
            }
            std::vector<Stmt> stores;
            for (int k = 0; k < kChunk; k++) {
                std::vector<int> indices;
                for (int j = 0; j < lanes; j++) indices.push_back(j * kChunk + k);
                const Expr index = Ramp::make(substitute(op->name, p0 + k, sr->base), 1, lanes);
                const Stmt s = Store::make(st->name, Shuffle::make(rows, indices), index, st->param, const_true(lanes),
                                           ModulusRemainder());
                stores.push_back(k == 0 || whole ? s : IfThenElse::make(k < valid, s));
            }
            Stmt body = Block::make(stores);
            const Expr mask = whole ? const_true(kChunk) : Ramp::make(0, 1, kChunk) < Broadcast::make(valid, kChunk);
            for (int j = lanes - 1; j >= 0; j--) {
                const Expr load = Load::make(row_type, ld->name, Ramp::make(row0 + j * lr->stride, 1, kChunk),
                                             ld->image, ld->param, mask, ModulusRemainder());
                body = LetStmt::make(row_names[j], load, body);
            }
            return body;
        };
        // Whole chunks with whole loads; the rest, if any, as a last chunk of masked loads.
        // (With every chunk masked, each row's mask computed per chunk, the ncg filter
        // gradient's staging of 14x14 planes took 0.75 ms of mb_dw576s2_14's 1.07 (NCHW, Zen 1,
        // Halide's profiler), 0.42 with whole chunks: kernel alone 1.12-1.19x. 7x7 planes are
        // one partial chunk a row, as before.)
        const Expr whole_chunks = op->extent / kChunk, rest = op->extent % kChunk;
        const Stmt whole_loop =
            For::make(chunk_name, 0, whole_chunks, ForType::Serial, op->device_api,
                      LetStmt::make(p0_name, op->min + chunk * kChunk, chunk_body(kChunk)));
        const Stmt last = IfThenElse::make(rest > 0, LetStmt::make(p0_name, op->min + whole_chunks * kChunk,
                                                                     chunk_body(rest)));
        return Block::make(whole_loop, last);
    }
};

}  // namespace convgrad::gen
