// convgrad bench --batch FILE [--dir BWD_D|BWD_W|both] [--layout nhwc|nchw] [--dtype f32|...]
//                [--device cpu|cuda|opencl] [--json PATH] [--min-time S] [--threads N]
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "commands.h"
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

int bench_command(int argc, char **argv) {
    // libgomp (oneDNN's threads) reads its wait policy before main(): spinning OpenMP threads
    // would steal the cores from convgrad's measurements. Re-run once with a passive policy.
    if (!std::getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        std::vector<char *> args{const_cast<char *>("convgrad"), const_cast<char *>("bench")};
        for (int i = 0; i < argc; i++) args.push_back(argv[i]);
        args.push_back(nullptr);
        execv("/proc/self/exe", args.data());  // only returns on failure: then measure as we are
    }
    CLI::App app{"convgrad bench: convgrad vs oneDNN on a batch of benchdnn problems", "bench"};
    bench::SuiteOptions o;
    std::string dir = "both", layout = "nhwc", dtype = "f32", device = "cpu", json;
    app.add_option("--batch", o.batch, "problems, one benchdnn descriptor per line")->required();
    app.add_option("--dir", dir, "BWD_D, BWD_W or both (default)");
    app.add_option("--layout", layout, "nhwc (default, HWIO weights) or nchw (OIHW weights)");
    app.add_option("--dtype", dtype, "f32 (default), f64, f16, bf16, i32");
    app.add_option("--device", device, "cpu (default, against oneDNN), cuda or opencl (convgrad alone)");
    app.add_option("--json", json, "also write the results as JSON");
    app.add_option("--min-time", o.min_time_s, "seconds per measurement (default 0.3)");
    app.add_option("--threads", o.threads, "threads for both libraries (default 2)");
    try {
        app.parse(argc + 1, argv - 1);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        return report_invalid(std::string("bench: ") + e.what());
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

}  // namespace convgrad::cli
