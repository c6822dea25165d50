#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace convgrad {
namespace {

constexpr int kDefaultSpinUs = 1000;
constexpr int kMaxThreads = 256;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// One parallel loop, on its caller's (the owner's) stack: the owner and idle workers claim its
// tasks one at a time.
struct Loop {
    halide_task_t fn;
    void *user_context;
    uint8_t *closure;
    int min, extent;
    const Loop *parent;            // the loop whose task published this one (nested), or null
    std::atomic<int> next{0};      // the next task to claim
    std::atomic<int> finished{0};  // tasks run, or skipped after a failure
    std::atomic<int> status{0};    // the first failing task's result

    // A loop lives while a task of each of its ancestors runs (their owners wait for it).
    bool nested_in(const Loop *ancestor) const {
        for (const Loop *l = parent; l != nullptr; l = l->parent) {
            if (l == ancestor) return true;
        }
        return false;
    }
};

thread_local const Loop *t_running = nullptr;  // the loop whose task this thread runs

void run_tasks(Loop &l) {
    const Loop *const outer = t_running;
    t_running = &l;
    for (int i; (i = l.next.fetch_add(1, std::memory_order_relaxed)) < l.extent;) {
        if (l.status.load(std::memory_order_relaxed) == 0) {
            if (const int r = l.fn(l.user_context, l.min + i, l.closure); r != 0) {
                int none = 0;
                l.status.compare_exchange_strong(none, r);
            }
        }
        l.finished.fetch_add(1, std::memory_order_release);
    }
    t_running = outer;
}

// Where loops are published. A worker counts itself in `users` before it reads `loop`, and an
// owner, having cleared `loop`, waits for `users` to drop to zero: once the owner returns (and
// its Loop goes out of scope), no worker holds a pointer to it. The owner holds the slot
// (`taken`) until then, so that another loop's helpers do not keep it waiting.
struct alignas(64) Slot {
    std::atomic<bool> taken{false};
    std::atomic<Loop *> loop{nullptr};
    std::atomic<int> users{0};
};

struct Pool {
    Slot slots[64];
    std::atomic<int> published{0};        // loops in slots: idle workers scan only when > 0
    std::atomic<unsigned> generation{0};  // bumped on each publication: a sleeper's wake-up test
    std::atomic<int> sleepers{0};
    std::atomic<int> threads{1};
    std::atomic<int> spin_us{kDefaultSpinUs};
    std::mutex mutex;  // sleeping, and creating workers
    std::condition_variable wake;
    std::atomic<int> workers_created{0};  // written under mutex

    Pool() {
        threads.store(default_pool_threads());
        if (const char *s = std::getenv("CONVGRAD_SPIN_US")) spin_us.store(std::max(0, std::atoi(s)));
    }

    bool active(int worker) const { return worker < threads.load(std::memory_order_relaxed) - 1; }

    // Helps the published loops that have tasks left (with `within`, only those nested in
    // it); true if it ran any.
    bool help(const Loop *within = nullptr) {
        bool ran = false;
        for (Slot &s : slots) {
            if (s.loop.load(std::memory_order_relaxed) == nullptr) continue;
            s.users.fetch_add(1);
            if (Loop *l = s.loop.load(); l != nullptr && l->next.load(std::memory_order_relaxed) < l->extent &&
                                         (within == nullptr || l->nested_in(within))) {
                run_tasks(*l);
                ran = true;
            }
            s.users.fetch_sub(1, std::memory_order_release);
        }
        return ran;
    }

    void worker(int id) {
        using Clock = std::chrono::steady_clock;
        auto idle_since = Clock::now();
        for (;;) {
            const unsigned seen = generation.load();
            if (active(id) && published.load(std::memory_order_relaxed) > 0 && help()) {
                idle_since = Clock::now();
                continue;
            }
            if (active(id) && Clock::now() - idle_since < std::chrono::microseconds(spin_us.load(std::memory_order_relaxed))) {
                for (int i = 0; i < 16; i++) cpu_relax();
                continue;
            }
            // Sleep until a loop is published after `seen` was read (a publisher bumps the
            // generation before it reads `sleepers`, a sleeper counts itself before it tests the
            // generation: one of the two sees the other).
            std::unique_lock<std::mutex> lock(mutex);
            sleepers.fetch_add(1);
            wake.wait(lock, [&] { return generation.load() != seen; });
            sleepers.fetch_sub(1);
            idle_since = Clock::now();
        }
    }

    void ensure_workers(int n) {
        if (workers_created.load(std::memory_order_acquire) >= n) return;  // every loop but the first
        std::lock_guard<std::mutex> lock(mutex);
        for (int id = workers_created.load(); id < n; id++) {
            // Detached, and the pool never destroyed: a worker may outlive main's statics.
            std::thread([this, id] { worker(id); }).detach();
            workers_created.store(id + 1, std::memory_order_release);
        }
    }

    void publish_wakes() {
        generation.fetch_add(1);
        if (sleepers.load() > 0) {
            { std::lock_guard<std::mutex> lock(mutex); }
            wake.notify_all();
        }
    }
};

}  // namespace

int default_pool_threads() {
    if (const char *s = std::getenv("HL_NUM_THREADS")) {
        if (const int n = std::atoi(s); n > 0) return std::min(n, kMaxThreads);
    }
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::clamp(CPU_COUNT(&set), 1, kMaxThreads);
#endif
    return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
}

namespace {

Pool &pool() {
    static Pool *const p = new Pool();
    return *p;
}

int run_serially(void *user_context, halide_task_t f, int min, int extent, uint8_t *closure) {
    for (int i = min; i < min + extent; i++) {
        if (const int r = f(user_context, i, closure); r != 0) return r;
    }
    return 0;
}

}  // namespace

extern "C" int convgrad_do_par_for(void *user_context, halide_task_t f, int min, int extent, uint8_t *closure) {
    Pool &p = pool();
    const int threads = p.threads.load(std::memory_order_relaxed);
    if (extent <= 1 || threads <= 1) return run_serially(user_context, f, min, extent, closure);
    p.ensure_workers(threads - 1);
    Loop loop;
    loop.fn = f, loop.user_context = user_context, loop.closure = closure, loop.min = min, loop.extent = extent;
    loop.parent = t_running;
    Slot *slot = nullptr;
    for (Slot &s : p.slots) {
        bool free = false;
        if (s.taken.compare_exchange_strong(free, true)) {
            slot = &s;
            break;
        }
    }
    if (slot == nullptr) return run_serially(user_context, f, min, extent, closure);  // 64 loops at once
    slot->loop.store(&loop);
    p.published.fetch_add(1);
    p.publish_wakes();
    run_tasks(loop);
    slot->loop.store(nullptr);
    p.published.fetch_sub(1);
    // While other threads finish its last tasks, the owner helps the loops those tasks run
    // (a kernel's nested parallel loops: Halide's owners help too), else pauses; it yields
    // if they take long (more threads than CPUs).
    for (int spins = 0; slot->users.load(std::memory_order_acquire) != 0 ||
                        loop.finished.load(std::memory_order_acquire) != extent;
         spins++) {
        if (p.published.load(std::memory_order_relaxed) > 0 && p.help(&loop)) {
            spins = 0;
        } else if (spins < (1 << 14)) {
            cpu_relax();
        } else {
            std::this_thread::yield();
        }
    }
    slot->taken.store(false);
    return loop.status.load();
}

void set_pool_threads(int threads) {
    Pool &p = pool();
    p.threads.store(threads <= 0 ? default_pool_threads() : std::min(threads, kMaxThreads));
    p.publish_wakes();  // workers beyond the new count go to sleep
}

int pool_threads() { return pool().threads.load(); }

void set_pool_spin_us(int microseconds) { pool().spin_us.store(std::max(0, microseconds)); }

}  // namespace convgrad
