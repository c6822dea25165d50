// The generators' accumulator check (generators/accumulator_check.h), which every CPU kernel
// runs while it is lowered: it must reject an allocation of `acc` whose update stage is
// missing, also when only one branch of several lost it, and accept every updated form.
#include <gtest/gtest.h>

#include <string>

#include "Halide.h"
#include "accumulator_check.h"

namespace convgrad::test {
namespace {

using namespace Halide;
using namespace Halide::Internal;
using gen::AccumulatorCheck;

const Type f32 = Float(32);

// acc[0] = value, inside an allocation of acc.
Stmt allocate_acc(const Stmt &body) {
    return Allocate::make("acc", f32, MemoryType::Stack, {4}, const_true(), body);
}
Stmt store_acc(const Expr &value) {
    return Store::make("acc", value, 0, Parameter(), const_true(), ModulusRemainder());
}
Expr load_acc() {
    return Load::make(f32, "acc", 0, Buffer<>(), Parameter(), const_true(), ModulusRemainder());
}
// The pure definition alone: what a branch whose update Halide dropped computes.
Stmt pure_only() { return allocate_acc(store_acc(0.0f)); }
// The pure definition, then the update as a loop of acc's stage 1.
Stmt updated_in_loop() {
    const Stmt update = For::make("acc.s1.r.x", 0, 3, ForType::Serial, DeviceAPI::None, store_acc(load_acc() + 1.0f));
    return allocate_acc(Block::make(store_acc(0.0f), update));
}
// The update unrolled away: a store to acc that reads acc.
Stmt updated_unrolled() { return allocate_acc(Block::make(store_acc(0.0f), store_acc(load_acc() + 2.0f))); }

void check(const Stmt &s) { AccumulatorCheck("test").mutate(s); }

TEST(AccumulatorCheck, AcceptsUpdatedAllocations) {
    EXPECT_NO_THROW(check(updated_in_loop()));
    EXPECT_NO_THROW(check(updated_unrolled()));
    const Expr c = Variable::make(Int(32), "ci") >= 8;
    EXPECT_NO_THROW(check(IfThenElse::make(c, updated_in_loop(), updated_unrolled())));
    // No accumulator at all (the Winograd kernels): nothing to check.
    EXPECT_NO_THROW(check(store_acc(1.0f)));
    // Funcs named after acc are not acc: in a multitarget build's second path, the pure copy
    // of rfactor's partial sums is "acc$1_intm_in_acc$1" (the first build of the check
    // failed on it).
    const Stmt copy = Allocate::make("acc$1_intm_in_acc$1", f32, MemoryType::Stack, {4}, const_true(),
                                     Store::make("acc$1_intm_in_acc$1", 0.0f, 0, Parameter(), const_true(), ModulusRemainder()));
    EXPECT_NO_THROW(check(copy));
}

TEST(AccumulatorCheck, RejectsAnAllocationWithoutItsUpdate) {
    EXPECT_THROW(check(pure_only()), std::runtime_error);
    // The pure stage's own loops (acc.s0.*) are no update.
    const Stmt pure_loop = allocate_acc(For::make("acc.s0.x", 0, 4, ForType::Serial, DeviceAPI::None, store_acc(0.0f)));
    EXPECT_THROW(check(pure_loop), std::runtime_error);
    // Another Func's update stage is not acc's.
    const Stmt other = allocate_acc(Block::make(
        store_acc(0.0f), For::make("acc_sum.s1.r.x", 0, 3, ForType::Serial, DeviceAPI::None, Evaluate::make(0))));
    EXPECT_THROW(check(other), std::runtime_error);
}

TEST(AccumulatorCheck, RejectsOneBranchWithoutItsUpdateBesideUpdatedOnes) {
    // As the Halide 14 bug did: one specialisation branch lost the update, the others kept it.
    const Expr c = Variable::make(Int(32), "ci") >= 8;
    const Stmt s = IfThenElse::make(c, updated_in_loop(), pure_only());
    try {
        check(s);
        FAIL() << "a branch without acc's update passed the check";
    } catch (const std::runtime_error &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("1 allocation(s) of acc without its update stage"), std::string::npos) << what;
        // The message names the branch: the else case of the condition on ci.
        EXPECT_NE(what.find("condition of the first: !("), std::string::npos) << what;
        EXPECT_NE(what.find("ci"), std::string::npos) << what;
    }
}

// Through Halide's own lowering, as the generators run it: a pipeline whose acc has an
// update lowers; one whose acc has none fails to compile.
TEST(AccumulatorCheck, RunsAsACustomLoweringPass) {
    const auto lower = [](bool with_update) {
        Var x("x");
        RDom r(0, 3, "r");
        Func acc("acc"), out("out");
        acc(x) = 0.0f;
        if (with_update) acc(x) += Halide::cast<float>(x + r);
        out(x) = acc(x) * 2.0f;
        acc.compute_root();
        Pipeline p(out);
        p.add_custom_lowering_pass(new AccumulatorCheck("lowering test"));
        p.compile_to_module({}, "k", get_host_target());
    };
    EXPECT_NO_THROW(lower(true));
    EXPECT_THROW(lower(false), std::runtime_error);
}

}  // namespace
}  // namespace convgrad::test
