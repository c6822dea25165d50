// The generators' accumulator check (generators/accumulator_check.h), which every CPU kernel
// runs while it is lowered: it must reject an allocation of `acc`, or of rfactor's
// intermediate `acc_intm`, whose update stage is missing, also when only one branch of
// several lost it, and accept every updated form.
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

// acc[0] = value, inside an allocation of acc (or of another Func `name`).
Stmt allocate_acc(const Stmt &body, const std::string &name = "acc") {
    return Allocate::make(name, f32, MemoryType::Stack, {4}, const_true(), body);
}
Stmt store_acc(const Expr &value, const std::string &name = "acc") {
    return Store::make(name, value, 0, Parameter(), const_true(), ModulusRemainder());
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

TEST(AccumulatorCheck, KnowsAccAndItsRfactorIntermediateByName) {
    for (const char *name : {"acc", "acc$1", "acc$12", "acc_intm", "acc$3_intm"}) {
        EXPECT_TRUE(AccumulatorCheck::is_acc(name)) << name;
    }
    for (const char *name : {"acc$", "acc$1x", "acc_intm_in_acc", "acc$1_intm_in_acc$1", "acc_sum", "_intm",
                             "x_acc", "acc$_intm", "accumulate"}) {
        EXPECT_FALSE(AccumulatorCheck::is_acc(name)) << name;
    }
    // Fixed problems (the JIT's specialised kernels) check acc alone.
    EXPECT_TRUE(AccumulatorCheck::is_acc("acc$2", false));
    EXPECT_FALSE(AccumulatorCheck::is_acc("acc$2_intm", false));
}

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
        EXPECT_NE(what.find("1 allocation(s) of acc or its rfactor intermediate without an update stage"),
                  std::string::npos) << what;
        // The message names the allocation and the branch: the else case of the condition on ci.
        EXPECT_NE(what.find("The first: acc, innermost condition !("), std::string::npos) << what;
        EXPECT_NE(what.find("ci"), std::string::npos) << what;
    }
}

TEST(AccumulatorCheck, RejectsAnRfactorIntermediateWithoutItsUpdate) {
    // As in the f64 nxc_sg AVX-512 kernel: acc kept its update (summing the partial sums),
    // the partial sums' allocation lost its own, so the tiles summed nothing.
    const std::string intm = "acc$2_intm";
    const Stmt pure_intm = allocate_acc(store_acc(0.0f, intm), intm);
    const Stmt s = Block::make(pure_intm, updated_in_loop());
    try {
        check(s);
        FAIL() << "an intermediate without its update passed the check";
    } catch (const std::runtime_error &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("The first: acc$2_intm, innermost condition (none)"), std::string::npos) << what;
    }
    // Not checked where the kernel is specialised to a fixed problem (the JIT's).
    EXPECT_NO_THROW(AccumulatorCheck("test", false).mutate(s));
    // With its update (a loop of its stage 1), it passes.
    const Stmt update = For::make(intm + ".s1.r", 0, 3, ForType::Serial, DeviceAPI::None,
                                  store_acc(Load::make(f32, intm, 0, Buffer<>(), Parameter(), const_true(),
                                                       ModulusRemainder()) + 1.0f, intm));
    EXPECT_NO_THROW(check(Block::make(allocate_acc(Block::make(store_acc(0.0f, intm), update), intm),
                                      updated_in_loop())));
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

// An rfactor'd reduction, as the filter gradients' chunks schedule it (the RDom split, the
// intermediate computed per chunk and vectorised), lowers cleanly: both acc and acc_intm
// keep their updates.
TEST(AccumulatorCheck, AcceptsAnRfactoredPipeline) {
    Var x("x"), u("u");
    RDom r(0, 64, "r");
    Func in("in"), acc("acc"), out("out");
    in(x) = Halide::cast<float>(x % 7);
    acc(x) = 0.0f;
    acc(x) += in(x + r);
    out(x) = acc(x);
    RVar ro("ro"), ri("ri");
    acc.update().split(r, ro, ri, 16);
    Func intm = acc.update().rfactor(ro, u);
    acc.compute_root();
    intm.compute_root().vectorize(x, 8).update().vectorize(x, 8);
    in.compute_root();
    Pipeline p(out);
    p.add_custom_lowering_pass(new AccumulatorCheck("rfactor test"));
    EXPECT_NO_THROW(p.compile_to_module({}, "k", get_host_target()));
}

}  // namespace
}  // namespace convgrad::test
