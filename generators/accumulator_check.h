// A lowering pass that checks, and changes nothing: every allocation of the accumulator
// `acc` must hold acc's update. Halide 14 has twice lowered a specialisation branch of a
// CPU schedule without acc's update stage (a tile condition it simplified, a select it
// folded), and the kernel then returned zeros on the shapes that took that branch. Run in
// the generator, the check covers every kernel the build (x86 multitarget paths, ARM64) or
// the JIT lowers, and fails that compile instead of shipping the branch.
//
// The same holds for rfactor's intermediate `acc_intm` (the partial sums), which carries the
// reduction where a schedule rfactors it. An allocation counts as updated when its body holds
// a loop or let of an update stage of its Func (`acc.s1.*`, `acc_intm.s1.*`, ...) or, where
// those loops were unrolled away, a store to acc that reads acc. Each allocation is checked
// on its own: a branch that lost its update is reported even where its sibling branches kept
// theirs.
#pragma once

#include <stdexcept>
#include <string>
#include <sstream>
#include <utility>
#include <vector>

#include "Halide.h"

namespace convgrad::gen {

class AccumulatorCheck : public Halide::Internal::IRMutator {
public:
    static constexpr const char *kFunc = "acc";

    // `what`: the kernel, for the message (generator, params, target). `intermediates`:
    // whether rfactor's intermediate is checked too (generic kernels; see generator_common.h).
    explicit AccumulatorCheck(std::string what, bool intermediates = true)
        : what_(std::move(what)), intermediates_(intermediates) {}

    // Whether `name` is acc's, as Halide names it: "acc", or "acc$1", "acc$2", ... where a
    // process lowers several pipelines that each have an acc (a multitarget build lowers
    // one per ISA path), each optionally followed by "_intm" (if `intermediates`): rfactor's
    // intermediate, the partial sums, which holds the reduction's update where a schedule
    // rfactors it (its update was dropped where acc kept its own: the tiles summed zeros). Not the
    // Funcs named after those ("acc$1_intm_in_acc$1", the pure copy of the partial sums,
    // has no update of its own).
    static bool is_acc(const std::string &name, bool intermediates = true) {
        const std::string intm = "_intm";
        std::string base = name;
        if (intermediates && base.size() > intm.size() && base.compare(base.size() - intm.size(), intm.size(), intm) == 0) {
            base.resize(base.size() - intm.size());
        }
        const std::string f = std::string(kFunc) + "$";
        if (base == kFunc) return true;
        if (base.rfind(f, 0) != 0 || base.size() == f.size()) return false;
        return base.find_first_not_of("0123456789", f.size()) == std::string::npos;
    }
    // Whether `name` belongs to an update stage of the Func `func`: "acc.s1.r$x" and the like,
    // not the pure definition's "acc.s0.*".
    static bool is_update_name(const std::string &name, const std::string &func) {
        const std::string prefix = func + ".s";
        return name.rfind(prefix, 0) == 0 && name.size() > prefix.size() && name[prefix.size()] != '0';
    }

    using IRMutator::mutate;
    Halide::Internal::Stmt mutate(const Halide::Internal::Stmt &s) override {
        Finder f;
        f.intermediates = intermediates_;
        s.accept(&f);
        if (!f.missing.empty()) {
            throw std::runtime_error("convgrad: " + what_ + ": " + std::to_string(f.missing.size()) +
                                     " allocation(s) of " + kFunc + " or its rfactor intermediate without an update stage " +
                                     "(Halide dropped it; the branch would compute zeros). The first: " +
                                     f.missing.front());
        }
        return s;
    }

private:
    // Walks the statement: per allocation of acc, whether its body updates acc.
    struct Finder : public Halide::Internal::IRVisitor {
        using IRVisitor::visit;
        struct Open {
            std::string name;
            bool updated = false;
        };
        std::vector<Open> open;               // allocations of acc around the node, innermost last
        std::vector<std::string> conditions;  // enclosing branch conditions, innermost last
        std::vector<std::string> missing;     // per allocation without an update: its name and condition
        bool intermediates = true;            // whether rfactor's intermediates count as acc

        // A mark counts for the innermost open allocation that `is_mark` accepts (by name).
        template<typename Accepts>
        void mark(Accepts is_mark) {
            for (auto it = open.rbegin(); it != open.rend(); ++it) {
                if (is_mark(it->name)) {
                    it->updated = true;
                    return;
                }
            }
        }
        // A loop or let of an update stage of one of the open allocations' Funcs.
        void mark_if_update(const std::string &name) {
            mark([&](const std::string &func) { return is_update_name(name, func); });
        }
        void visit(const Halide::Internal::Allocate *op) override {
            if (!is_acc(op->name, intermediates)) return IRVisitor::visit(op);
            open.push_back({op->name, false});
            IRVisitor::visit(op);
            const bool updated = open.back().updated;
            open.pop_back();
            if (!updated) {
                missing.push_back(op->name + ", innermost condition " +
                                  (conditions.empty() ? std::string("(none)") : conditions.back()));
            }
        }
        void visit(const Halide::Internal::IfThenElse *op) override {
            op->condition.accept(this);
            std::ostringstream c;
            c << op->condition;
            conditions.push_back(c.str());
            op->then_case.accept(this);
            conditions.back() = "!(" + conditions.back() + ")";
            if (op->else_case.defined()) op->else_case.accept(this);
            conditions.pop_back();
        }
        void visit(const Halide::Internal::For *op) override {
            mark_if_update(op->name);
            IRVisitor::visit(op);
        }
        void visit(const Halide::Internal::LetStmt *op) override {
            mark_if_update(op->name);
            IRVisitor::visit(op);
        }
        void visit(const Halide::Internal::Store *op) override {
            if (is_acc(op->name, intermediates) && reads(op->value, op->name)) {
                mark([&](const std::string &func) { return func == op->name; });
            }
            IRVisitor::visit(op);
        }

        static bool reads(const Halide::Expr &e, const std::string &buffer) {
            struct Reads : public Halide::Internal::IRVisitor {
                using IRVisitor::visit;
                std::string buffer;
                bool found = false;
                void visit(const Halide::Internal::Load *op) override {
                    found |= op->name == buffer;
                    IRVisitor::visit(op);
                }
            } r;
            r.buffer = buffer;
            e.accept(&r);
            return r.found;
        }
    };

    std::string what_;
    bool intermediates_;
};

}  // namespace convgrad::gen
