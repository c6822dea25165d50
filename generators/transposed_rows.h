// A lowering pass for the transposing copies that the CPU schedules stage in cache
// (schedules/cpu_staging.h: the ncg kernels' blocks of planes). Such a copy is a loop over
// positions p whose body stores one vector of L lanes, lane j read from plane j:
//
//   for p: out[ramp(Bs(p), 1, L)] = in[ramp(Bl(p), S, L)]      (Bl(p + 1) = Bl(p) + 1)
//
// (or lane j from plane order[j]: a concatenation of loads of two vectorised dims, the
// filter gradient's pairs of small groups; planes_in_order below.)
// Halide 14 builds each strided load from L scalar loads and L inserts; on 7x7 planes those
// were the top of the profile. The pass rewrites the loop over chunks of 8 positions:
// per chunk, contiguous loads along each plane and 8 stores of shuffles of them, instead of
// a load and an insert per element. Whole chunks, and a last chunk of 4-7 positions (two
// overlapping runs of 4), are transposed by 4x4 blocks inside 128-bit lanes
// (transposed_in_lanes) with L = 4, 8 or 16; other widths, and chunks of fewer positions,
// shuffle whole rows (masked loads and guarded stores for the latter). Other loops are left
// alone. (The border's stores: see visit(Store).)
#pragma once

#include <array>
#include <string>
#include <vector>

#include "Halide.h"

namespace convgrad::gen {

class TransposedRows : public Halide::Internal::IRMutator {
    using IRMutator::visit;

    static constexpr int kChunk = 8;  // positions per chunk: a row of 7-9 is one or two

    // One chunk of `n` (4 to kChunk) positions, for `lanes` (4, 8 or 16) planes, transposed by
    // 4x4 blocks inside each 128-bit lane, as the classic AVX 8x8 transpose does: per run of
    // 4 positions, each plane's 4 elements are loaded as one 128-bit piece, and the pieces of
    // planes j, j+4, j+8, ... are concatenated into vector r_j (j < 4, a 128-bit insert from
    // memory); then two rounds of in-lane shuffles (unpcklps/unpckhps, then movlhps/movhlps
    // per lane) give the 4 positions' vectors, lane l from plane l. Left to LLVM, one shuffle
    // of all 8 rows per position became lane-crossing permutes, blends and 128-bit inserts
    // (vpermps, vpermpd: several micro-ops each on Zen 1), ~150 micro-ops per 8x8 block
    // against ~60 so: the staging was 85 % of the NCHW mb_dw576s2_14 filter gradient.
    // The runs start at 0 and 4 (a whole chunk), or 0 and n - 4 (overlapping; the second
    // stores its positions from 4 on).
    static Halide::Internal::Stmt transposed_in_lanes(const std::string &loop, const Halide::Internal::Store &st,
                                                      const Halide::Internal::Load &ld, const Halide::Expr &row0,
                                                      const std::vector<Halide::Expr> &planes, const Halide::Expr &p0,
                                                      int n, const std::vector<int> &order) {
        using namespace Halide;
        using namespace Halide::Internal;
        const int lanes = ld.type.lanes(), blocks = lanes / 4;
        const Type piece_type = ld.type.with_lanes(4);
        std::vector<std::pair<std::string, Expr>> lets;  // in order of definition
        std::vector<Stmt> stores;
        const auto let = [&](const std::string &name, const Expr &value) {
            lets.emplace_back(name, value);
            return Variable::make(value.type(), name);
        };
        // A shuffle of a and b within each 128-bit lane: lane i of a block takes element
        // pattern[i] of that block of a (0-3) or of b (4-7).
        const auto in_lanes = [&](const Expr &a, const Expr &b, const std::array<int, 4> &pattern) {
            std::vector<int> indices;
            for (int blk = 0; blk < blocks; blk++) {
                for (int i : pattern) indices.push_back(i < 4 ? 4 * blk + i : lanes + 4 * blk + i - 4);
            }
            return Shuffle::make({a, b}, indices);
        };
        const std::vector<int> starts = n == 4 ? std::vector<int>{0} : std::vector<int>{0, n == kChunk ? 4 : n - 4};
        for (int start : starts) {
            const std::string tag = loop + ".t" + std::to_string(start);
            std::vector<Expr> r;
            for (int j = 0; j < 4; j++) {
                std::vector<Expr> pieces;
                for (int blk = 0; blk < blocks; blk++) {
                    const Expr base = row0 + planes[j + 4 * blk] + start;
                    pieces.push_back(Load::make(piece_type, ld.name, Ramp::make(base, 1, 4), ld.image, ld.param,
                                                const_true(4), ModulusRemainder()));
                }
                r.push_back(let(tag + ".r" + std::to_string(j), Shuffle::make_concat(pieces)));
            }
            const Expr t0 = let(tag + ".lo01", in_lanes(r[0], r[1], {0, 4, 1, 5}));
            const Expr t1 = let(tag + ".hi01", in_lanes(r[0], r[1], {2, 6, 3, 7}));
            const Expr t2 = let(tag + ".lo23", in_lanes(r[2], r[3], {0, 4, 1, 5}));
            const Expr t3 = let(tag + ".hi23", in_lanes(r[2], r[3], {2, 6, 3, 7}));
            const Expr position[4] = {in_lanes(t0, t2, {0, 1, 4, 5}), in_lanes(t0, t2, {2, 3, 6, 7}),
                                      in_lanes(t1, t3, {0, 1, 4, 5}), in_lanes(t1, t3, {2, 3, 6, 7})};
            for (int i = 0; i < 4; i++) {
                const int k = start + i;
                if (start > 0 && k < 4) continue;  // (the first run's)
                const Expr index = Ramp::make(substitute(loop, p0 + k, st.index.as<Ramp>()->base), 1, lanes);
                stores.push_back(Store::make(st.name, in_order(position[i], order), index, st.param, const_true(lanes),
                                             ModulusRemainder()));
            }
        }
        Stmt body = Block::make(stores);
        for (auto l = lets.rbegin(); l != lets.rend(); ++l) body = LetStmt::make(l->first, l->second, body);
        return body;
    }

    // A concatenation of k loads of m lanes each, ramp(b + o*S, G, m) for o < k (two
    // vectorised dims, as Halide 14 lowers them: the filter gradient's pairs of small groups,
    // ncx_sg, k channels of a pair of groups G apart, lane (o, i) from channel o of group i)
    // reads the k*m planes q = o + i*k at b + o*S + i*G, in another order: returns a load of
    // ramp(b, S, k*m) (its lanes' planes replaced by `planes`, each plane's offset from b)
    // and in `order` each lane's plane, for in_order below. A load of ramp(b, S, L) is
    // returned as it is, its planes j*S. Anything else: undefined.
    Halide::Expr planes_in_order(const Halide::Expr &value, std::vector<int> &order,
                                 std::vector<Halide::Expr> &planes) const {
        using namespace Halide;
        using namespace Halide::Internal;
        if (const Load *l = value.as<Load>()) {
            const Ramp *r = l->index.as<Ramp>();
            if (!r) return Expr();
            for (int j = 0; j < r->lanes; j++) planes.push_back(j * r->stride);
            return value;
        }
        const Shuffle *cat = value.as<Shuffle>();
        if (!cat || !cat->is_concat() || cat->vectors.size() < 2) return Expr();
        const int k = static_cast<int>(cat->vectors.size());
        std::vector<const Load *> loads;
        std::vector<const Ramp *> ramps;
        for (const Expr &v : cat->vectors) {
            const Load *l = v.as<Load>();
            const Ramp *r = l ? l->index.as<Ramp>() : nullptr;
            if (!r || r->base.type().is_vector() || !is_const_one(l->predicate) || l->name != cat->vectors[0].as<Load>()->name) {
                return Expr();
            }
            loads.push_back(l);
            ramps.push_back(r);
        }
        // (The bases are lets of CSE: compared by their values.)
        const auto base = [&](int o) { return expanded(ramps[o]->base); };
        const int m = ramps[0]->lanes;
        const Expr plane = simplify(base(1) - base(0)), group = ramps[0]->stride;
        for (int o = 0; o < k; o++) {
            if (ramps[o]->lanes != m || !can_prove(base(o) == base(0) + o * plane) ||
                !can_prove(ramps[o]->stride == group)) {
                return Expr();
            }
        }
        for (int o = 0; o < k; o++) {
            for (int i = 0; i < m; i++) order.push_back(o + i * k);
        }
        for (int q = 0; q < k * m; q++) planes.push_back(simplify((q % k) * plane + (q / k) * group));
        return Load::make(value.type(), loads[0]->name, Ramp::make(ramps[0]->base, plane, k * m), loads[0]->image,
                          loads[0]->param, const_true(k * m), ModulusRemainder());
    }

    // The enclosing lets' values, innermost last, and `e` with them substituted.
    std::vector<std::pair<std::string, Halide::Expr>> lets_;
    Halide::Expr expanded(Halide::Expr e) const {
        for (auto l = lets_.rbegin(); l != lets_.rend(); ++l) e = Halide::Internal::substitute(l->first, l->second, e);
        return Halide::Internal::simplify(e);
    }
    Halide::Internal::Stmt visit(const Halide::Internal::LetStmt *op) override {
        lets_.emplace_back(op->name, op->value);
        Halide::Internal::Stmt s = IRMutator::visit(op);
        lets_.pop_back();
        return s;
    }

    // `v` (lane l from plane l) with lane l from plane order[l] instead (none: as it is).
    static Halide::Expr in_order(const Halide::Expr &v, const std::vector<int> &order) {
        return order.empty() ? v : Halide::Internal::Shuffle::make({v}, order);
    }

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
        std::vector<int> order;
        std::vector<Expr> planes;  // each lane's plane, from the first (below: lr's base)
        const Expr value = st ? planes_in_order(st->value, order, planes) : Expr();
        const Load *ld = value.defined() ? value.as<Load>() : nullptr;
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
        // One chunk at p0 of `valid` positions. Each plane's row is loaded whole (kChunk
        // positions), as two overlapping 4-lane vectors (4 to 7 positions, a constant count:
        // elements 0-3 and valid-4 to valid-1, plain loads), or masked (fewer, or a run-time
        // count); each position's store shuffles its lane of every plane's row together.
        const auto chunk_body = [&](const Expr &valid) {
            const int64_t *count = as_const_int(valid);
            const int n = count ? int(*count) : -1;
            const bool whole = n == kChunk, halves = n >= 4 && n < kChunk;
            if ((whole || halves) && (lanes == 4 || lanes == 8 || lanes == 16)) {
                return transposed_in_lanes(op->name, *st, *ld, row0, planes, p0, n, order);
            }
            const int width = halves ? 4 : kChunk;     // lanes per load
            const int parts = halves && n > 4 ? 2 : 1;  // loads per plane
            const Type part_type = ld->type.with_lanes(width);
            const Expr mask = whole || halves ? const_true(width)
                                              : Ramp::make(0, 1, kChunk) < Broadcast::make(valid, kChunk);
            std::vector<Expr> parts_of_rows;
            std::vector<std::pair<std::string, Expr>> loads;
            for (int j = 0; j < lanes; j++) {
                for (int q = 0; q < parts; q++) {
                    const std::string name = op->name + ".row" + std::to_string(j) + "." + std::to_string(q);
                    const Expr base = row0 + planes[j] + (q == 0 ? 0 : n - 4);
                    loads.emplace_back(name, Load::make(part_type, ld->name, Ramp::make(base, 1, width), ld->image,
                                                        ld->param, mask, ModulusRemainder()));
                    parts_of_rows.push_back(Variable::make(part_type, name));
                }
            }
            std::vector<Stmt> stores;
            for (int k = 0; k < (n > 0 ? n : kChunk); k++) {
                std::vector<int> indices;
                const int q = halves && k >= 4 ? 1 : 0;
                for (int j = 0; j < lanes; j++) indices.push_back((j * parts + q) * width + (q == 0 ? k : k - (n - 4)));
                const Expr index = Ramp::make(substitute(op->name, p0 + k, sr->base), 1, lanes);
                const Stmt s = Store::make(st->name, in_order(Shuffle::make(parts_of_rows, indices), order), index,
                                           st->param, const_true(lanes), ModulusRemainder());
                stores.push_back(k == 0 || n > 0 ? s : IfThenElse::make(k < valid, s));
            }
            Stmt body = Block::make(stores);
            for (auto l = loads.rbegin(); l != loads.rend(); ++l) body = LetStmt::make(l->first, l->second, body);
            return body;
        };
        // Whole chunks with whole loads; the rest, if any, as a last chunk: from plain loads
        // for 4 to 7 positions, masked for fewer. (Zen 1 takes ~13 cycles per masked load
        // or store, a plain one ~1: bench/RESULTS.md, thirty-fourth session. With every chunk
        // masked, the ncg filter gradient's staging of 14x14 planes took 0.75 ms of
        // mb_dw576s2_14's 1.07 (NCHW, Halide's profiler), 0.42 with whole chunks.)
        // (A known extent, as in a JIT kernel for one problem, makes the rest a constant:
        // its one body, not the branch per count.)
        const Expr whole_chunks = simplify(op->extent / kChunk), rest = simplify(op->extent % kChunk);
        const Stmt whole_loop =
            For::make(chunk_name, 0, whole_chunks, ForType::Serial, op->device_api,
                      LetStmt::make(p0_name, op->min + chunk * kChunk, chunk_body(kChunk)));
        const int64_t *known = as_const_int(rest);
        if (known && *known == 0) return whole_loop;
        Stmt tail = chunk_body(rest);
        if (!known) {
            for (int n = 4; n < kChunk; n++) tail = IfThenElse::make(rest == n, chunk_body(n), tail);
            tail = IfThenElse::make(rest > 0, tail);
        }
        return Block::make(whole_loop, LetStmt::make(p0_name, op->min + whole_chunks * kChunk, tail));
    }
};

}  // namespace convgrad::gen
