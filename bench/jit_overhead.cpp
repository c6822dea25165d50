// What the JIT costs, on one problem (default rn50_3x3_56's data gradient from suite.conv):
// the first call with an empty cache (generator + link + load), the first call of a fresh
// process whose disk cache has the kernel (load + key check), the steady state, and the
// dispatch overhead per call on a tiny problem (JIT lookup vs the AOT table), as markdown.
//   convgrad_jit_overhead [--problem NAME] [--batch FILE]
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "convgrad/convgrad.h"
#include "convgrad/jit.h"
#include "suite.h"

namespace {

using namespace convgrad;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

Result<ConvProblem> find_problem(const std::string &batch, const std::string &name) {
    auto problems = bench::parse_batch(batch);
    if (!problems.is_ok()) return problems.status;
    for (const bench::BenchProblem &b : problems.value) {
        if (b.name == name) return bench::to_problem(b, false, DType::kFloat32);
    }
    return Status::invalid("no problem named " + name + " in " + batch);
}

// First call and steady state of one gradient; prints "first steady" for the parent.
int measure(const ConvProblem &p, Backend backend, double *first, double *steady) {
    auto g = bench::ConvgradGradient::create(p, Direction::kBackwardData, Device::kCpu, backend);
    if (!g.is_ok()) return std::fprintf(stderr, "%s\n", g.status.message().c_str()), 1;
    const auto t0 = Clock::now();
    if (Status s = g.value->execute(); !s) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    *first = ms_since(t0);
    *steady = bench::median_ms([&] { g.value->execute(); }, 0.3);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    std::string name = "rn50_3x3_56", batch = CONVGRAD_SUITE, disk_hit_cache;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--problem")) name = argv[i + 1];
        if (!std::strcmp(argv[i], "--batch")) batch = argv[i + 1];
        if (!std::strcmp(argv[i], "--disk-hit-child")) disk_hit_cache = argv[i + 1];
    }
    set_num_threads(2);
    auto p = find_problem(batch, name);
    if (!p.is_ok()) return std::fprintf(stderr, "%s\n", p.status.message().c_str()), 2;
    jit::Options o;
    double first = 0, steady = 0;
    if (!disk_hit_cache.empty()) {  // the child: a fresh process over a warm cache
        o.cache_dir = disk_hit_cache;
        jit::enable(o);
        if (measure(p.value, Backend::kJit, &first, &steady)) return 1;
        std::printf("%f %f %lld\n", first, steady, static_cast<long long>(jit::stats().disk_hits));
        return 0;
    }

    char tmpl[] = "/tmp/convgrad_jit_overhead_XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    o.cache_dir = tmpl;
    jit::enable(o);
    double aot_first = 0, aot_steady = 0, cold = 0, jit_steady = 0;
    if (measure(p.value, Backend::kAot, &aot_first, &aot_steady)) return 1;
    if (measure(p.value, Backend::kJit, &cold, &jit_steady)) return 1;

    // Disk hit: this program again, in a new process, over the cache just written.
    const std::string cmd = "'/proc/" + std::to_string(getpid()) + "/exe' --problem '" + name + "' --batch '" + batch +
                            "' --disk-hit-child '" + tmpl + "'";
    FILE *child = popen(cmd.c_str(), "r");
    double disk_first = 0, disk_steady = 0;
    long long disk_hits = 0;
    if (!child || std::fscanf(child, "%lf %lf %lld", &disk_first, &disk_steady, &disk_hits) != 3) {
        return std::fprintf(stderr, "the disk-hit child failed\n"), 1;
    }
    pclose(child);

    // Dispatch overhead: a 1-channel 4x4 1x1 problem, where the kernel itself is nothing.
    ConvProblem tiny;
    tiny.input_size = tiny.output_size = {4, 4, 1};
    double tiny_first = 0, tiny_aot = 0, tiny_jit = 0;
    measure(tiny, Backend::kAot, &tiny_first, &tiny_aot);
    measure(tiny, Backend::kJit, &tiny_first, &tiny_jit);
    const jit::Stats st = jit::stats();

    std::printf("JIT overhead, %s data gradient (f32, 2 threads):\n\n", name.c_str());
    std::printf("| | ms |\n|---|---|\n");
    std::printf("| AOT first call / steady state | %.2f / %.2f |\n", aot_first, aot_steady);
    std::printf("| JIT cold first call (generator + link + load + run) | %.0f |\n", cold);
    std::printf("| JIT disk hit: first call of a fresh process (load + key check + run) | %.2f |\n", disk_first);
    std::printf("| JIT steady state (memory hit) | %.2f |\n", jit_steady);
    std::printf("| dispatch per call, tiny problem: AOT / JIT (memory hit) | %.4f / %.4f |\n", tiny_aot, tiny_jit);
    std::printf("\nstats: %lld compiles, %lld memory hits; child: %lld disk hit(s)\n",
                static_cast<long long>(st.compiles), static_cast<long long>(st.memory_hits), disk_hits);
    std::filesystem::remove_all(tmpl);
    return 0;
}
