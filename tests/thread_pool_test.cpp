// The kernels' thread pool (runtime/src/thread_pool.h): every task of a loop runs exactly once,
// on more than one thread, loops nest and run from several threads at once, a failing task's
// result is the loop's, one thread runs a loop in order on the caller, and 0 threads means the
// default.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "thread_pool.h"

namespace convgrad {
namespace {

struct Counts {
    std::vector<std::atomic<int>> runs;
    std::mutex mutex;
    std::set<std::thread::id> threads;
    explicit Counts(int n) : runs(n) {}
};

int count_task(void *, int i, uint8_t *closure) {
    auto *c = reinterpret_cast<Counts *>(closure);
    c->runs[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(c->mutex);
    c->threads.insert(std::this_thread::get_id());
    return 0;
}

class ThreadPool : public ::testing::Test {
protected:
    void SetUp() override { set_pool_threads(2); }
    void TearDown() override {
        set_pool_threads(2);
        set_pool_spin_us(1000);
    }
};

TEST_F(ThreadPool, EveryTaskRunsOnceFromTheGivenMin) {
    for (int spin : {0, 1000}) {
        set_pool_spin_us(spin);
        for (int round = 0; round < 50; round++) {
            Counts c(1007);
            ASSERT_EQ(convgrad_do_par_for(nullptr, count_task, 7, 1000, reinterpret_cast<uint8_t *>(&c)), 0);
            for (int i = 0; i < 1007; i++) ASSERT_EQ(c.runs[i].load(), i >= 7 ? 1 : 0) << "task " << i << " spin " << spin;
        }
    }
}

int slow_task(void *, int i, uint8_t *closure) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return count_task(nullptr, i, closure);
}

TEST_F(ThreadPool, TasksRunOnMoreThanOneThread) {
    Counts c(20);
    ASSERT_EQ(convgrad_do_par_for(nullptr, slow_task, 0, 20, reinterpret_cast<uint8_t *>(&c)), 0);
    EXPECT_EQ(c.threads.size(), 2u);
}

TEST_F(ThreadPool, OneThreadRunsTheLoopInOrderOnTheCaller) {
    set_pool_threads(1);
    struct Order {
        std::vector<int> seen;
        std::thread::id caller = std::this_thread::get_id();
        bool elsewhere = false;
    } order;
    const auto task = [](void *, int i, uint8_t *closure) {
        auto *o = reinterpret_cast<Order *>(closure);
        o->seen.push_back(i);
        o->elsewhere |= std::this_thread::get_id() != o->caller;
        return 0;
    };
    ASSERT_EQ(convgrad_do_par_for(nullptr, task, 3, 5, reinterpret_cast<uint8_t *>(&order)), 0);
    EXPECT_EQ(order.seen, (std::vector<int>{3, 4, 5, 6, 7}));
    EXPECT_FALSE(order.elsewhere);
}

struct Nested {
    Counts inner{8 * 16};
};

int inner_task(void *, int i, uint8_t *closure) { return count_task(nullptr, i, closure); }

int outer_task(void *, int i, uint8_t *closure) {
    auto *n = reinterpret_cast<Nested *>(closure);
    // The inner loop's tasks i*16 .. i*16+15, as a nested parallel loop of a kernel.
    return convgrad_do_par_for(nullptr, inner_task, i * 16, 16, reinterpret_cast<uint8_t *>(&n->inner));
}

TEST_F(ThreadPool, LoopsNestAndRunFromSeveralThreadsAtOnce) {
    std::vector<std::thread> callers;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; t++) {
        callers.emplace_back([&] {
            for (int round = 0; round < 100; round++) {
                Nested n;
                if (convgrad_do_par_for(nullptr, outer_task, 0, 8, reinterpret_cast<uint8_t *>(&n)) != 0) failures++;
                for (int i = 0; i < 8 * 16; i++) {
                    if (n.inner.runs[i].load() != 1) failures++;
                }
            }
        });
    }
    for (auto &c : callers) c.join();
    EXPECT_EQ(failures.load(), 0);
}

// 0 restores the default (convgrad_set_num_threads(0), as halide_set_num_threads(0) did),
// rather than clamping to one thread.
TEST_F(ThreadPool, ZeroThreadsMeansTheDefault) {
    set_pool_threads(1);
    EXPECT_EQ(pool_threads(), 1);
    set_pool_threads(0);
    EXPECT_EQ(pool_threads(), default_pool_threads());
    set_pool_threads(-3);
    EXPECT_EQ(pool_threads(), default_pool_threads());
    set_pool_threads(1000);
    EXPECT_EQ(pool_threads(), 256);
}

TEST_F(ThreadPool, AFailingTaskFailsTheLoopAndThePoolGoesOn) {
    const auto failing = [](void *, int i, uint8_t *closure) {
        reinterpret_cast<std::atomic<int> *>(closure)->fetch_add(1);
        return i == 13 ? -7 : 0;
    };
    std::atomic<int> ran{0};
    EXPECT_EQ(convgrad_do_par_for(nullptr, failing, 0, 1000, reinterpret_cast<uint8_t *>(&ran)), -7);
    EXPECT_GE(ran.load(), 1);
    EXPECT_LE(ran.load(), 1000);
    Counts c(64);
    ASSERT_EQ(convgrad_do_par_for(nullptr, count_task, 0, 64, reinterpret_cast<uint8_t *>(&c)), 0);
    for (int i = 0; i < 64; i++) EXPECT_EQ(c.runs[i].load(), 1);
}

}  // namespace
}  // namespace convgrad
