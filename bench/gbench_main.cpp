// Google Benchmark over the suite: one benchmark per (problem, direction, implementation),
// convgrad and oneDNN (user layout and own layout) side by side, 2 threads. Counters give
// GFLOP/s. `convgrad bench` prints the same comparison as a table with ratios.
// CONVGRAD_BATCH=FILE: other problems; CONVGRAD_LAYOUT=nchw: NCHW activations, OIHW weights
// (default NHWC/HWIO). --benchmark_filter=convgrad times convgrad alone (for profiling).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdlib>
#include <string>

#include "onednn_runner.h"
#include "suite.h"

using namespace convgrad;
using namespace convgrad::bench;

int main(int argc, char **argv) {
    const char *batch = std::getenv("CONVGRAD_BATCH");
    auto problems = parse_batch(batch ? batch : CONVGRAD_SUITE);
    if (!problems.is_ok()) {
        std::fprintf(stderr, "%s\n", problems.status.message().c_str());
        return 2;
    }
    const char *layout = std::getenv("CONVGRAD_LAYOUT");
    const bool nchw = layout && std::string(layout) == "nchw";
    set_num_threads(2);
    omp_set_num_threads(2);
    for (const BenchProblem &b : problems.value) {
        const ConvProblem p = to_problem(b, nchw, DType::kFloat32);
        for (Direction d : {Direction::kBackwardData, Direction::kBackwardWeights}) {
            const std::string dir = d == Direction::kBackwardData ? "BWD_D" : "BWD_W";
            auto cg = ConvgradGradient::create(p, d);
            if (cg.is_ok()) {
                auto g = cg.value;
                benchmark::RegisterBenchmark((b.name + "/" + dir + "/convgrad").c_str(), [g, b](benchmark::State &s) {
                    for (auto _ : s) g->execute();
                    s.counters["GFLOP/s"] = benchmark::Counter(b.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
                })->Unit(benchmark::kMillisecond)->UseRealTime();
            }
            for (const OneDnnVariant &v : kOneDnnVariants) {
                auto dnn = OneDnnGradient::create(p, d, v.own_layout, v.algorithm);
                if (!dnn.is_ok()) continue;
                auto g = dnn.value;
                benchmark::RegisterBenchmark((b.name + "/" + dir + "/onednn_" + v.name).c_str(),
                                             [g, b](benchmark::State &s) {
                                                 for (auto _ : s) g->execute();
                                                 s.counters["GFLOP/s"] = benchmark::Counter(
                                                     b.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
                                             })
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
            }
        }
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
