// convgrad bench --batch FILE [--dir BWD_D|BWD_W|both] [--layout nhwc|nchw] [--dtype f32|...]
//                [--device cpu|cuda|opencl] [--backend aot|jit] [--json PATH] [--min-time S] [--threads N]
// convgrad autoschedule --autoscheduler Mullapudi2016|Adams2019|Li2018 [--beam N] [--print-schedule DIR]
//                [the bench options]: the same, plus each problem scheduled by a Halide autoscheduler
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "commands.h"
#include "convgrad/jit.h"
#include "suite.h"

namespace convgrad::cli {
namespace {

Result<DType> parse_bench_dtype(const std::string &s) {
    const std::pair<const char *, DType> names[] = {{"f32", DType::kFloat32}, {"f64", DType::kFloat64},
                                                    {"f16", DType::kFloat16}, {"bf16", DType::kBFloat16},
                                                    {"i32", DType::kInt32}};
    for (const auto &[name, t] : names) {
        if (s == name || s == dtype_name(t)) return t;
    }
    return Status::invalid("--dtype: must be f32, f64, f16, bf16 or i32, got '" + s + "'");
}

}  // namespace

// `autoschedule`: bench plus, per problem, the pipeline scheduled by a Halide autoscheduler.
int bench_or_autoschedule(int argc, char **argv, bool autoschedule) {
    // Both libraries run with their threads' default wait policy: idle threads spin a while
    // before they sleep (libgomp, oneDNN's: ~300000 pauses, 6-7 ms of one core measured on a
    // Zen 5; convgrad's pool: runtime/src/thread_pool.h). median_ms waits until the other
    // library's threads sleep before it measures. (OMP_WAIT_POLICY=passive in the environment
    // times oneDNN with sleeping threads: what earlier sessions' numbers did, bench/RESULTS.md.)
    CLI::App app{autoschedule ? "convgrad autoschedule: Halide's autoschedulers beside convgrad's schedules and oneDNN"
                              : "convgrad bench: convgrad vs oneDNN on a batch of benchdnn problems",
                 autoschedule ? "autoschedule" : "bench"};
    bench::SuiteOptions o;
    std::string dir = "both", layout = "nhwc", dtype = "f32", device = "cpu", backend = "aot", json, schedules;
    int beam = 1;
    if (autoschedule) {
        app.add_option("--autoscheduler", o.autoscheduler, "Mullapudi2016, Adams2019 or Li2018")->required();
        app.add_option("--beam", beam, "Adams2019's beam size (HL_BEAM_SIZE; default 1: its default beam exhausts memory)");
        app.add_option("--print-schedule", schedules, "write each generated schedule (.schedule.h) into this directory");
    }
    app.add_option("--batch", o.batch, "problems, one benchdnn descriptor per line")->required();
    app.add_option("--dir", dir, "BWD_D, BWD_W or both (default)");
    app.add_option("--layout", layout, "nhwc (default, HWIO weights) or nchw (OIHW weights)");
    app.add_option("--dtype", dtype, "f32 (default), f64, f16, bf16, i32");
    app.add_option("--device", device, "cpu (default, against oneDNN), cuda or opencl (convgrad alone)");
    app.add_option("--backend", backend, "aot (default) or jit (kernels compiled for each problem; the compile is the untimed first call)");
    app.add_option("--json", json, "also write the results as JSON");
    app.add_option("--min-time", o.min_time_s, "seconds per measurement (default 0.3)");
    app.add_option("--threads", o.threads, "threads for both libraries (default 2)");
    try {
        app.parse(argc + 1, argv - 1);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        return report_invalid(std::string(autoschedule ? "autoschedule: " : "bench: ") + e.what());
    }
    if (dir != "both" && dir != "BWD_D" && dir != "BWD_W") return report_invalid("bench: --dir: must be BWD_D, BWD_W or both");
    if (layout != "nhwc" && layout != "nchw") return report_invalid("bench: --layout: must be nhwc or nchw");
    if (o.threads < 1 || o.min_time_s < 0) return report_invalid("bench: --threads and --min-time must be positive");
    auto t = parse_bench_dtype(dtype);
    if (!t.is_ok()) return report(Status(t.status.code(), "bench: " + t.status.message()));
    o.dtype = t.value;
    if (!parse_device(device, &o.device) || o.device == Device::kAuto) {
        return report_invalid("bench: --device: must be cpu, cuda or opencl");
    }
    if (backend != "aot" && backend != "jit") return report_invalid("bench: --backend: must be aot or jit");
    if (backend == "jit") {
        o.backend = Backend::kJit;
        if (Status s = jit::enable(); !s) return report(s);
    }
    if (autoschedule) {
        if (o.autoscheduler != "Mullapudi2016" && o.autoscheduler != "Adams2019" && o.autoscheduler != "Li2018") {
            return report_invalid("autoschedule: --autoscheduler: must be Mullapudi2016, Adams2019 or Li2018");
        }
        if (o.device != Device::kCpu || o.backend != Backend::kAot) {
            return report_invalid("autoschedule: CPU and convgrad's AOT kernels only (no --device or --backend)");
        }
        if (beam < 1) return report_invalid("autoschedule: --beam must be positive");
        setenv("HL_BEAM_SIZE", std::to_string(beam).c_str(), 1);
        jit::Options jo;
        jo.autoscheduler = o.autoscheduler;
        jo.schedule_dir = schedules;
        if (Status s = jit::enable(jo); !s) return report(s);
    }
    o.data = dir != "BWD_W", o.weights = dir != "BWD_D", o.nchw = layout == "nchw";
    auto r = bench::run_suite(o, [](const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); });
    if (!r.is_ok()) return report(Status(r.status.code(), "bench: " + r.status.message()));
    std::printf("%s", bench::format_table(o, r.value).c_str());
    if (!json.empty()) {
        std::ofstream f(json);
        f << bench::format_json(o, r.value) << "\n";
        if (!f) return report(Status::internal("bench: --json: cannot write '" + json + "'"));
    }
    return 0;
}

int bench_command(int argc, char **argv) { return bench_or_autoschedule(argc, argv, false); }
int autoschedule_command(int argc, char **argv) { return bench_or_autoschedule(argc, argv, true); }

}  // namespace convgrad::cli
