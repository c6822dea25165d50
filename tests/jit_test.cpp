// The JIT backend (convgrad/jit.h): specialised kernels compute what the AOT ones compute
// (the dtype contract and the AOT results, on random problems), and the cache behaves: miss,
// memory hit, disk hit, corrupt and stale entries rebuilt, one compile for concurrent
// threads, concurrent processes sharing a cache, a cache that cannot be written, auto
// taking only compiled kernels, a missing generator.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "contract.h"
#include "convgrad/jit.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

namespace fs = std::filesystem;

// A fresh cache directory per test, removed afterwards.
class Jit : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/convgrad_jit_XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        cache = tmpl;
        jit::Options o;
        o.cache_dir = cache;
        ASSERT_TRUE(jit::enable(o).is_ok());
        jit::clear_memory_cache();  // kernels loaded by earlier tests
        base = jit::stats();
    }
    void TearDown() override {
        jit::disable();
        std::error_code ec;
        fs::remove_all(cache, ec);
    }
    // Counters since SetUp.
    jit::Stats delta() const {
        jit::Stats s = jit::stats();
        s.compiles -= base.compiles, s.disk_hits -= base.disk_hits, s.memory_hits -= base.memory_hits;
        s.healed -= base.healed;
        return s;
    }
    std::vector<fs::path> entries() const {
        std::vector<fs::path> out;
        for (const auto &e : fs::directory_iterator(cache)) out.push_back(e.path());
        return out;
    }

    std::string cache;
    jit::Stats base;
};

ConvProblem layer() {
    ConvProblem p;
    p.batch = 2, p.in_channels = 16, p.out_channels = 8;
    p.input_size = {7, 10, 1};  // H, W: stride 2 along an even W takes the x-phase variant
    p.kernel_size = {3, 3, 1};
    p.strides = {1, 2, 1};
    p.output_size = {7, 5, 1};
    p.pads_begin = p.pads_end = {1, 1, 0};
    return p;
}

struct Inputs {
    std::vector<double> dy, w;
};
Inputs inputs(const ConvProblem &p, uint64_t seed) {
    Rng rng(seed);
    return {random_values(num_elements(output_shape(p)), rng), random_values(num_elements(filter_shape(p)), rng)};
}

RunResult run_data(const ConvProblem &p, const Inputs &in, Backend b) {
    return run_problem(p, Direction::kBackwardData, in.dy, in.w, false, TestDevice{Device::kCpu, false, b});
}

// The contract on random problems (every rank, layout, stride, dilation, grouping), f32 and
// one 16-bit type, with kernels compiled for each problem.
TEST_F(Jit, MeetsTheDtypeContract) {
    const int cases = std::getenv("CONVGRAD_TEST_CASES") ? 3 : 6;
    check_dtype(DType::kFloat32, ProblemMix::kSmall, 301, cases, TestDevice{Device::kCpu, false, Backend::kJit});
    check_dtype(DType::kBFloat16, ProblemMix::kSmall, 302, 2, TestDevice{Device::kCpu, false, Backend::kJit});
    EXPECT_GE(delta().compiles, 2 * cases);
}

// Same results as the AOT kernels (same schedule, constants instead of parameters), on the
// stride-2 variant, a depthwise one and the generic one.
TEST_F(Jit, AgreesWithAot) {
    for (const char *variant : {"nxc_s2", "nxg", "any"}) {
        ConvProblem p = layer();
        bool gapped = false;
        if (std::string(variant) == "nxg") p.groups = p.in_channels = p.out_channels = 8;
        if (std::string(variant) == "any") gapped = true;
        const Inputs in = inputs(p, 303);
        const RunResult aot = run_problem(p, Direction::kBackwardData, in.dy, in.w, gapped,
                                          TestDevice{Device::kCpu, false, Backend::kAot});
        const RunResult jit = run_problem(p, Direction::kBackwardData, in.dy, in.w, gapped,
                                          TestDevice{Device::kCpu, false, Backend::kJit});
        ASSERT_TRUE(aot.status.is_ok() && jit.status.is_ok()) << aot.status.message() << jit.status.message();
        EXPECT_NE(aot.kernel.find(variant), std::string::npos) << aot.kernel;
        EXPECT_LE(relative_error(jit.result, aot.result), 1e-6) << variant;
    }
}

TEST_F(Jit, MissThenMemoryHitThenDiskHit) {
    const ConvProblem p = layer();
    const Inputs in = inputs(p, 304);
    const RunResult first = run_data(p, in, Backend::kJit);
    ASSERT_TRUE(first.status.is_ok()) << first.status.message();
    EXPECT_EQ(delta().compiles, 1);
    EXPECT_EQ(first.kernel, "bwd_data_f32_nxc_s2") << "selecting never compiles";
    const RunResult second = run_data(p, in, Backend::kJit);
    EXPECT_EQ(second.kernel, "jit:bwd_data_f32_nxc_s2");
    EXPECT_EQ(delta().memory_hits, 1);
    EXPECT_EQ(second.result, first.result);
    jit::clear_memory_cache();
    const RunResult third = run_data(p, in, Backend::kJit);
    EXPECT_EQ(delta().disk_hits, 1);
    EXPECT_EQ(delta().compiles, 1);
    EXPECT_EQ(third.result, first.result);
    // One entry, no leftover build directories.
    const auto e = entries();
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].extension(), ".so");
}

// Runs `workers` copies of JitWorker.CompileIntoSharedCache (this binary) at once on this
// cache; each compiles or loads layer()'s kernel and checks it against the AOT one.
// `expect_healed`: each worker must find a bad entry and rebuild it.
void run_workers(const std::string &cache, int workers, bool expect_healed) {
    std::vector<pid_t> pids;
    for (int i = 0; i < workers; i++) {
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            setenv("CONVGRAD_JIT_WORKER_CACHE", cache.c_str(), 1);
            if (expect_healed) setenv("CONVGRAD_JIT_WORKER_EXPECT_HEALED", "1", 1);
            execl("/proc/self/exe", "convgrad_jit_tests", "--gtest_filter=JitWorker.*", nullptr);
            _exit(127);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) {
        int status = 0;
        waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker failed: " << status;
    }
}

// A damaged entry, or one holding another problem's kernel, is found when a process loads
// it (the key stored in the entry must match), deleted and rebuilt. Damage is checked in a
// fresh process: this one keeps its mapping of the entry it loaded.
TEST_F(Jit, CorruptAndStaleEntriesAreRebuilt) {
    const ConvProblem p = layer();
    ASSERT_TRUE(run_data(p, inputs(p, 308), Backend::kJit).status.is_ok());
    const fs::path entry = entries().at(0);
    const auto replace_entry = [&](const fs::path &from, uintmax_t size) {
        const fs::path tmp = fs::path(cache) / "replacement";
        fs::copy_file(from, tmp);
        if (size > 0) fs::resize_file(tmp, size);
        fs::rename(tmp, entry);  // a new file: this process's mapping of the old one stays valid
    };
    replace_entry(entry, 100);  // truncated: dlopen fails
    run_workers(cache, 1, true);
    // Stale: a valid kernel of another problem under this problem's name.
    ConvProblem q = p;
    q.pads_begin = {0, 0, 0}, q.pads_end = {2, 2, 0};
    ASSERT_TRUE(run_data(q, inputs(q, 306), Backend::kJit).status.is_ok());
    fs::path other;
    for (const auto &e : entries()) if (e != entry) other = e;
    ASSERT_FALSE(other.empty());
    replace_entry(other, 0);
    run_workers(cache, 1, true);
    EXPECT_EQ(entries().size(), 2u) << "two good entries, nothing left over";
}

TEST_F(Jit, ConcurrentThreadsCompileOnce) {
    const ConvProblem p = layer();
    const Inputs in = inputs(p, 307);
    std::vector<RunResult> results(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; i++) threads.emplace_back([&, i] { results[i] = run_data(p, in, Backend::kJit); });
    for (auto &t : threads) t.join();
    for (const RunResult &r : results) {
        ASSERT_TRUE(r.status.is_ok()) << r.status.message();
        EXPECT_EQ(r.result, results[0].result);
    }
    EXPECT_EQ(delta().compiles, 1);
    EXPECT_EQ(delta().memory_hits, 3);
}

// Several processes compiling the same kernel into one cache: every one succeeds, and the
// cache ends with one complete entry.
TEST_F(Jit, ConcurrentProcessesShareTheCache) {
    run_workers(cache, 3, false);
    ASSERT_EQ(entries().size(), 1u) << "one entry, no leftover build directories";
    const RunResult r = run_data(layer(), inputs(layer(), 308), Backend::kJit);
    ASSERT_TRUE(r.status.is_ok()) << r.status.message();
    EXPECT_EQ(delta().disk_hits, 1);
}

TEST(JitWorker, CompileIntoSharedCache) {
    const char *dir = std::getenv("CONVGRAD_JIT_WORKER_CACHE");
    if (dir == nullptr) GTEST_SKIP() << "runs as a worker process of Jit.ConcurrentProcessesShareTheCache";
    jit::Options o;
    o.cache_dir = dir;
    ASSERT_TRUE(jit::enable(o).is_ok());
    const ConvProblem p = layer();
    const Inputs in = inputs(p, 308);
    const RunResult jit = run_data(p, in, Backend::kJit), aot = run_data(p, in, Backend::kAot);
    ASSERT_TRUE(jit.status.is_ok()) << jit.status.message();
    EXPECT_LE(relative_error(jit.result, aot.result), 1e-6);
    if (std::getenv("CONVGRAD_JIT_WORKER_EXPECT_HEALED")) {
        EXPECT_EQ(jit::stats().healed, 1);
        EXPECT_EQ(jit::stats().compiles, 1);
    }
}

TEST_F(Jit, UnwritableCacheCompilesInMemoryOnly) {
    jit::Options o;
    o.cache_dir = "/proc/convgrad-cache";  // cannot be created, even by root
    ASSERT_TRUE(jit::enable(o).is_ok());
    EXPECT_FALSE(jit::stats().disk_cache_writable);
    const ConvProblem p = layer();
    const Inputs in = inputs(p, 309);
    const RunResult jit = run_data(p, in, Backend::kJit), aot = run_data(p, in, Backend::kAot);
    ASSERT_TRUE(jit.status.is_ok()) << jit.status.message();
    EXPECT_LE(relative_error(jit.result, aot.result), 1e-6);
    EXPECT_TRUE(run_data(p, in, Backend::kJit).status.is_ok());
    EXPECT_EQ(delta().memory_hits, 1);
}

// auto never compiles: it runs a JIT kernel only once one exists, else the AOT kernel.
TEST_F(Jit, AutoTakesOnlyCompiledKernels) {
    const ConvProblem p = layer();
    const Inputs in = inputs(p, 310);
    RunResult r = run_data(p, in, Backend::kAuto);
    ASSERT_TRUE(r.status.is_ok());
    EXPECT_EQ(r.kernel, "bwd_data_f32_nxc_s2");
    EXPECT_EQ(delta().compiles, 0);
    ASSERT_TRUE(run_data(p, in, Backend::kJit).status.is_ok());
    r = run_data(p, in, Backend::kAuto);
    EXPECT_EQ(r.kernel, "jit:bwd_data_f32_nxc_s2");
    EXPECT_EQ(run_data(p, in, Backend::kAot).kernel, "bwd_data_f32_nxc_s2");
}

// Tuned parameters (what `convgrad tune` tries) change the schedule, never the result; an
// unknown parameter is a clean error.
TEST_F(Jit, ScheduleParametersKeepResults) {
    const std::string isa = expected_isa_path() + ".";
    const ConvProblem p = layer();
    const Inputs in = inputs(p, 312);
    Rng rng(313);
    const auto x = random_values(num_elements(input_shape(p)), rng);
    const RunResult data_ref = run_data(p, in, Backend::kAot);
    const RunResult weights_ref = run_problem(p, Direction::kBackwardWeights, x, in.dy, false,
                                              TestDevice{Device::kCpu, false, Backend::kAot});
    for (const std::string &params : {isa + "pixels:4/" + isa + "vectors:1", isa + "pixels:8/" + isa + "rows7:0",
                                      isa + "ci_tile:4/" + isa + "co_vectors:1"}) {
        SCOPED_TRACE(params);
        jit::Options o;
        o.cache_dir = cache;
        o.schedule = params;
        ASSERT_TRUE(jit::enable(o).is_ok());
        const RunResult d = run_data(p, in, Backend::kJit);
        const RunResult w = run_problem(p, Direction::kBackwardWeights, x, in.dy, false,
                                        TestDevice{Device::kCpu, false, Backend::kJit});
        ASSERT_TRUE(d.status.is_ok() && w.status.is_ok()) << d.status.message() << w.status.message();
        EXPECT_LE(relative_error(d.result, data_ref.result), 1e-6);
        EXPECT_LE(relative_error(w.result, weights_ref.result), 1e-6);
    }
    jit::Options bad;
    bad.cache_dir = cache;
    bad.schedule = "pixel:5";
    ASSERT_TRUE(jit::enable(bad).is_ok());
    const RunResult r = run_data(p, in, Backend::kJit);
    EXPECT_FALSE(r.status.is_ok());
    EXPECT_NE(r.status.message().find("unknown parameter 'pixel'"), std::string::npos) << r.status.message();
}

// Generic kernels (specialise = false, as `convgrad tune` compiles them): the AOT build's
// kernel, so one compile serves two problems of its variant, with the AOT kernel's results.
TEST_F(Jit, GenericKernelsServeEveryProblemOfTheirVariant) {
    jit::Options o;
    o.cache_dir = cache;
    o.specialise = false;
    ASSERT_TRUE(jit::enable(o).is_ok());
    ConvProblem p = layer();
    for (int64_t batch : {2, 3}) {
        p.batch = batch;
        const Inputs in = inputs(p, 320 + batch);
        const RunResult aot = run_data(p, in, Backend::kAot);
        const RunResult jit = run_data(p, in, Backend::kJit);
        ASSERT_TRUE(aot.status.is_ok() && jit.status.is_ok()) << aot.status.message() << jit.status.message();
        EXPECT_NE(jit.kernel.find("bwd_data_f32_nxc_s2"), std::string::npos) << jit.kernel;
        EXPECT_LE(relative_error(jit.result, aot.result), 1e-6);
    }
    EXPECT_EQ(delta().compiles, 1);
}

TEST_F(Jit, MissingGeneratorIsAnError) {
    jit::Options o;
    o.cache_dir = cache;
    o.generator = "/nonexistent/convgrad_generators";
    ASSERT_TRUE(jit::enable(o).is_ok());
    const ConvProblem p = layer();
    const Inputs in = inputs(p, 311);
    RunResult r = run_data(p, in, Backend::kJit);
    EXPECT_EQ(r.status.code(), StatusCode::kUnsupported) << r.status.message();
    EXPECT_NE(r.status.message().find("generator"), std::string::npos) << r.status.message();
    for (double v : r.result) ASSERT_TRUE(std::isnan(v)) << "the poisoned result must stay untouched";
    EXPECT_TRUE(run_data(p, in, Backend::kAuto).status.is_ok()) << "auto falls back to the AOT kernel";
}

}  // namespace
}  // namespace convgrad::test
