// convgrad tune --batch FILE [--dir BWD_D|BWD_W|both] [--layout nhwc|nchw|both] [--dtype f32|...] [--budget SECONDS]
//               [--db PATH] [--log PATH] [--min-time S] [--threads N]
//
// The autotuner: for each problem, the kernel variant the registry picks is compiled (through
// the JIT, as the generic kernel the AOT build ships: a kernel specialised to the problem
// ranks tiles differently, rn50_1x1_7's filter gradient gained 1.08x from ci_tile 6 there
// and 1.20x in the shipped kernel) with each candidate of its schedule parameters and timed.
// Every measurement is appended to a log (JSON lines), so an interrupted run resumes where it
// stopped; the JIT's disk cache keeps the compiled candidates too. Then, per variant, the
// candidate with the best geomean speedup over the schedules' defaults, across all problems
// that use the variant (its finalists timed again, interleaved with the defaults), goes into
// the database (schedules/tuned/<family>.json) with the
// command that produced it; the AOT build and the JIT read it. Every candidate's result is
// checked against the AOT kernel's first: a wrong one is logged and never chosen; a winner
// must also match the AOT kernel on narrow and odd rows (correct_on_other_shapes). Parameters are qualified by
// this CPU's ISA path (e.g. avx512_skylake.pixels:5): other paths keep their defaults, and the
// items an earlier run wrote for them stay in the database (merged_database).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "commands.h"
#include "kernel_variant.h"
#include "../schedules/register_file.h"
#include "convgrad/jit.h"
#include "suite.h"

namespace convgrad::cli {
namespace {

using nlohmann::json;

// The candidates of a variant's schedule parameters ("" = the schedules' defaults, always
// first). The grids span the register-tile shapes that fit this path's 32 (AVX-512, NEON) or
// 16 vector registers (schedules/register_file.h), the depthwise filter gradient's row
// chunks (and the flat-plane one's groups per task), and the Winograd kernels' blocks of tiles.
std::vector<std::string> candidates(const std::string &variant, const std::string &isa) {
    std::vector<std::string> out = {""};
    const bool data = variant.rfind("bwd_data", 0) == 0;
    const bool depthwise = variant.find("_nxg") != std::string::npos || variant.find("_ncg") != std::string::npos;
    const auto q = [&](const std::string &k, int v) { return isa + "." + k + ":" + std::to_string(v); };
    // The register file (32 vectors or 16), whose register tiles hold up to 24 or 13
    // accumulators beside the loads and broadcasts.
    const bool wide = vector_registers_of(isa == "avx512_skylake", isa == "arm64") == 32;
    const int max_tile = wide ? 24 : 13;
    if (variant.size() > 4 && variant.substr(variant.size() - 4) == "_any") return out;  // scalar fallback
    const KernelVariant v = KernelVariant::parse(variant);  // the suffixes only
    const bool pixel_vectors = v.pixel_vectors || v.flat_planes;  // both tile vectors of pixels
    if (v.winograd && data) {
        // Tiles per block, and the products' register tile (vectors of dx channels x tiles).
        for (int tiles : {8, 32, 64}) out.push_back(q("wg_tiles", tiles));
        out.push_back(q("wg_vectors", 4) + "/" + q("wg_tile_count", 6));
    } else if (v.winograd) {
        // Tiles per block, and chunks reduced in parallel.
        for (int tiles : {16, 64}) out.push_back(q("wg_tiles", tiles));
        for (int chunks : {2, 8}) out.push_back(q("wg_chunks", chunks));
    } else if (v.flat_planes && !data) {
        // Groups per task (the default 32, at most G/16).
        for (int groups : {8, 16, 64}) out.push_back(q("block", groups));
    } else if (data && pixel_vectors) {
        for (int v : {2, 3, 6}) out.push_back(q("px_vectors", v));
    } else if (data && depthwise) {
        for (int px : {4, 5, 7, 8}) out.push_back(q("pixels", px) + "/" + q("rows7", 0));
    } else if (data) {
        for (int vectors : {1, 2, 3}) {
            for (int px : {3, 4, 5, 6, 8}) {
                // Tiles that leave registers for the loads; not the defaults (2 x 6, or 2 x 3).
                if (vectors * px > max_tile || (vectors == 2 && px == (wide ? 6 : 3))) continue;
                if (v.pointwise && vectors == 3) continue;  // its tiles divide a slab of 64 channels
                out.push_back(q("vectors", vectors) + "/" + q("pixels", px) + "/" + q("rows7", 0));
            }
        }
    } else if (depthwise) {
        // Row chunks, and positions per unrolled step (1: fewer live vectors beside the 9
        // taps' accumulators, for 16 registers); not the defaults (4 rows, or 8 for ncg, by
        // 2 positions: cpu_bwd_weights.cpp), which "" measures.
        const int default_rows = variant.find("_ncg") != std::string::npos ? 8 : 4;
        for (int rows : {2, 4, 8, 16}) {
            for (int positions : {1, 2}) {
                if (rows == default_rows && positions == 2) continue;
                out.push_back(q("dw_rows", rows) + (positions == 2 ? "" : "/" + q("dw_positions", positions)));
            }
        }
    } else {
        for (int co : {1, 2, 3}) {
            for (int ci : {4, 6, 8, 10}) {
                if (co * ci > max_tile || (co == 2 && ci == (wide ? 8 : 4))) continue;  // as above (2 x 8, or 2 x 4)
                out.push_back(q("co_vectors", co) + "/" + q("ci_tile", ci));
            }
        }
    }
    return out;
}

struct Task {
    std::string problem, dir, line, variant;
    ConvProblem p;
    Direction d;
};

// ("generic": the kernels measured are the AOT build's, not specialised to the problem as the
// first logs' were, so those logs' lines do not resume a run.)
std::string measurement_key(const std::string &line, const std::string &dir, DType t, const std::string &schedule) {
    return line + "|" + dir + "|" + dtype_name(t) + "|generic|" + schedule;
}

// A candidate must be right everywhere the AOT build would use it, not only on the tuned
// problems: a schedule parameter can trip a Halide 14 bug on some shapes only (pixels:8 gave
// zeros on 10-pixel rows). So the candidate is also compiled for the task's problem with
// narrow and small rows, batch 1, wherever the registry still picks the same variant, and
// compared with the AOT kernel.
void progress_bar(size_t done, size_t total, const std::string &what) {
    const int width = 30, filled = total ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\r[%s%s] %zu/%zu %-60.60s", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), done, total, what.c_str());
    std::fflush(stderr);
}

// JIT kernels from here on are compiled with these schedule parameters, against the
// schedules' own defaults ("" = the defaults; the database is not consulted).
Status use_candidate(const std::string &schedule) {
    jit::Options o;
    o.schedule = schedule;
    o.use_database = false;
    o.specialise = false;  // the generic kernels the AOT build ships, not the problem's own
    return jit::enable(o);
}

// How far a candidate's result may be from the AOT kernel's (another summation order).
double tolerance(DType t) { return t == DType::kInt32 ? 0.0 : dtype_size(t) == 2 ? 1e-2 : 1e-4; }

bool correct_on_other_shapes(const Task &t, const std::string &variant, const std::string &cand) {
    const int r = t.p.spatial_rank;
    for (int64_t w : {1, 2, 3, 4, 5, 6, 7, 9, 10, 13, 14}) {
        ConvProblem q = t.p;
        q.batch = 1;
        // Input width w; output width from the same stride, kernel, dilation and pads.
        const int a = r - 1;  // the innermost spatial axis
        const int64_t span = w + q.pads_begin[a] + q.pads_end[a] - (q.kernel_size[a] - 1) * q.dilations[a] - 1;
        if (span < 0) continue;
        q.input_size[a] = w;
        q.output_size[a] = span / q.strides[a] + 1;
        // pads_end consistent with the sizes (as validate() wants).
        q.pads_end[a] = (q.output_size[a] - 1) * q.strides[a] + (q.kernel_size[a] - 1) * q.dilations[a] + 1 - w -
                        q.pads_begin[a];
        if (!validate(q)) continue;
        auto aot = bench::ConvgradGradient::create(q, t.d, Device::kCpu, Backend::kAot);
        if (!aot.is_ok() || aot.value->kernel() != variant || !aot.value->execute()) continue;
        use_candidate(cand);
        auto jit = bench::ConvgradGradient::create(q, t.d, Device::kCpu, Backend::kJit);
        if (!jit.is_ok() || !jit.value->execute()) return false;
        if (!(jit.value->relative_error_to(*aot.value) <= tolerance(q.dtype))) return false;
    }
    return true;
}

// The top 3 candidates and the defaults, timed again on each of the variant's problems in 3
// interleaved rounds (defaults, c1, c2, c3, defaults, ...), so a burst of load on the machine
// hits them all alike. A finalist's score is its worst round: the geomean gain over the
// defaults in each round separately, the smallest of the three (on this shared machine the
// winner of a single pass changed from run to run). Compiles are cache hits.
std::vector<std::pair<double, std::string>> confirm(const std::vector<const Task *> &tasks,
                                                    const std::vector<std::pair<double, std::string>> &ranked,
                                                    double min_time) {
    std::vector<std::string> finalists = {""};
    for (size_t i = 0; i < ranked.size() && i < 3; i++) finalists.push_back(ranked[i].second);
    constexpr int kRounds = 3;
    std::vector<std::vector<double>> log_gain(finalists.size(), std::vector<double>(kRounds, 0.0));
    for (const Task *t : tasks) {
        std::vector<std::vector<double>> times(finalists.size());
        std::vector<std::shared_ptr<bench::ConvgradGradient>> grads(finalists.size());
        for (size_t f = 0; f < finalists.size(); f++) {
            use_candidate(finalists[f]);
            auto g = bench::ConvgradGradient::create(t->p, t->d, Device::kCpu, Backend::kJit);
            if (!g.is_ok() || !g.value->execute()) return {};  // measured fine before: give up on this variant
            grads[f] = g.value;  // the kernel stays loaded; execute() looks it up by the options at call time
        }
        for (int round = 0; round < kRounds; round++) {
            for (size_t f = 0; f < finalists.size(); f++) {
                progress_bar(0, 0, "confirming " + t->variant + " on " + t->problem + " " + t->dir);
                use_candidate(finalists[f]);
                times[f].push_back(bench::median_ms([&] { grads[f]->execute(); }, min_time));
            }
        }
        for (size_t f = 0; f < finalists.size(); f++) {
            for (int round = 0; round < kRounds; round++) log_gain[f][round] += std::log(times[0][round] / times[f][round]);
        }
    }
    std::vector<std::pair<double, std::string>> out;
    for (size_t f = 1; f < finalists.size(); f++) {
        const double worst = *std::min_element(log_gain[f].begin(), log_gain[f].end());
        out.push_back({std::exp(worst / tasks.size()), finalists[f]});
    }
    std::sort(out.rbegin(), out.rend());
    return out;
}


// A variant's tuned items for the other ISA paths ("avx512_skylake.dw_rows:8/avx2.dw_rows:8"
// without `isa`'s): a run tunes the path this CPU takes and replaces only that path's items,
// so an AVX2 machine's run keeps what an AVX-512 machine found, and the reverse.
std::string other_paths_items(const std::string &schedule, const std::string &isa) {
    std::string out, item;
    std::stringstream items(schedule);
    while (std::getline(items, item, '/')) {
        if (item.empty() || item.rfind(isa + ".", 0) == 0) continue;
        out += (out.empty() ? "" : "/") + item;
    }
    return out;
}

// The database after this run: each tuned variant's entry keeps the other paths' items and
// their records ("paths": per ISA path, the problems and the gain), and variants this run
// did not tune stay as they were. Each path's last run (its command) is kept in "runs".
// (Entries written before paths were recorded apart carry the old top-level isa_path.)
json merged_database(const json &old, const std::string &isa, const json &run,
                     const std::map<std::string, json> &results) {
    const bool ok = !old.is_discarded() && old.is_object();
    json variants = ok && old.contains("variants") ? old["variants"] : json::object();
    json runs = ok && old.contains("runs") ? old["runs"] : json::object();
    if (ok && old.contains("isa_path") && old.contains("command") && !runs.contains(old["isa_path"].get<std::string>())) {
        runs[old["isa_path"].get<std::string>()] = {{"command", old["command"]}};
    }
    for (auto &[name, entry] : variants.items()) {
        if (!entry.contains("paths") && ok && old.contains("isa_path")) {
            entry["paths"] = {{old["isa_path"].get<std::string>(),
                               {{"problems", entry.value("problems", 0)}, {"geomean_speedup", entry.value("geomean_speedup", 1.0)}}}};
            entry.erase("problems");
            entry.erase("geomean_speedup");
        }
    }
    for (const auto &[name, result] : results) {  // every variant this run tuned; null: defaults won
        json entry = variants.contains(name) ? variants[name] : json::object();
        std::string schedule = other_paths_items(entry.value("schedule", ""), isa);
        json paths = entry.contains("paths") ? entry["paths"] : json::object();
        paths.erase(isa);
        if (!result.is_null()) {
            schedule += (schedule.empty() ? "" : "/") + result["schedule"].get<std::string>();
            paths[isa] = {{"problems", result["problems"]}, {"geomean_speedup", result["geomean_speedup"]}};
        }
        if (schedule.empty()) {
            variants.erase(name);
        } else {
            variants[name] = {{"schedule", schedule}, {"paths", paths}};
        }
    }
    runs[isa] = run;
    return {{"about", "Tuned schedule parameters, written by `convgrad tune` (tools/tune_command.cpp); read by the AOT "
                      "build (cmake/ConvgradKernels.cmake) and the JIT. Do not edit by hand: rerun the command on a "
                      "machine of each ISA path (runs)."},
            {"runs", runs},
            {"variants", variants}};
}

}  // namespace

int tune_command(int argc, char **argv) {
    CLI::App app{"convgrad tune: search the schedules' parameters on real problems", "tune"};
    std::string batch, dir = "both", layout = "nhwc", dtype_arg = "float32", db, log;
    double budget = 600, min_time = 0.1;
    int threads = 2;
    app.add_option("--batch", batch, "problems, one benchdnn descriptor per line")->required();
    app.add_option("--dir", dir, "BWD_D, BWD_W or both (default)");
    app.add_option("--layout", layout, "nhwc (default: NHWC activations, HWIO weights), nchw (OIHW) or both");
    app.add_option("--dtype", dtype_arg, "float32 (default), float64, float16, bfloat16, int32");
    app.add_option("--budget", budget, "seconds of tuning (default 600); the log keeps what was measured");
    app.add_option("--db", db, "database to write (default: this build's schedules/tuned/<family>.json)");
    app.add_option("--log", log, "measurement log, JSON lines (default: <db>.log.jsonl)");
    app.add_option("--min-time", min_time, "seconds per measurement (default 0.1)");
    app.add_option("--threads", threads, "threads (default 2)");
    try {
        app.parse(argc + 1, argv - 1);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        return report_invalid(std::string("tune: ") + e.what());
    }
    DType dtype;
    if (!parse_dtype(dtype_arg, &dtype)) return report_invalid("tune: --dtype: unknown '" + dtype_arg + "'");
    if (dir != "both" && dir != "BWD_D" && dir != "BWD_W") return report_invalid("tune: --dir: '" + dir + "': must be BWD_D, BWD_W or both");
    if (layout != "both" && layout != "nhwc" && layout != "nchw") return report_invalid("tune: --layout: '" + layout + "': must be nhwc, nchw or both");
    if (budget <= 0 || min_time < 0 || threads < 1) return report_invalid("tune: --budget, --min-time and --threads must be positive");
    db = jit::database_path(db);
    if (log.empty()) log = db + ".log.jsonl";
    auto problems = bench::parse_batch(batch);
    if (!problems.is_ok()) return report(Status(problems.status.code(), "tune: " + problems.status.message()));
    set_num_threads(threads);
    const std::string isa = expected_isa_path();

    // The variant each problem runs (the registry's choice, AOT).
    std::vector<Task> tasks;
    // Per layout, the problem's line (the measurements' key) marked " nchw" for NCHW, and its
    // name likewise; a variant that both layouts run is tuned on both sets of problems.
    for (const bool nchw : {false, true}) {
        if (layout != "both" && (layout == "nchw") != nchw) continue;
        for (const bench::BenchProblem &b : problems.value) {
            const ConvProblem p = bench::to_problem(b, nchw, dtype);
            const std::string problem = b.name + (nchw ? " nchw" : ""), line = b.line + (nchw ? " nchw" : "");
            if (Status s = validate(p); !s) return report(Status(s.code(), "tune: " + problem + ": " + s.message()));
            for (Direction d : {Direction::kBackwardData, Direction::kBackwardWeights}) {
                const std::string name = d == Direction::kBackwardData ? "BWD_D" : "BWD_W";
                if (dir != "both" && dir != name) continue;
                auto g = bench::ConvgradGradient::create(p, d, Device::kCpu, Backend::kAot);
                if (!g.is_ok()) return report(Status(g.status.code(), "tune: " + problem + ": " + g.status.message()));
                tasks.push_back({problem, name, line, g.value->kernel(), p, d});
            }
        }
    }

    // Resume: what the log already holds.
    std::map<std::string, double> measured;
    {
        std::ifstream in(log);
        std::string line;
        while (std::getline(in, line)) {
            const json j = json::parse(line, nullptr, false);
            if (j.is_discarded() || !j.contains("key") || !j.contains("ms")) continue;
            measured[j["key"].get<std::string>()] = j["ms"].get<double>();
        }
    }
    const size_t resumed = measured.size();
    size_t total = 0, done = 0;
    for (const Task &t : tasks) total += candidates(t.variant, isa).size();
    std::ofstream out(log, std::ios::app);
    if (!out) return report(Status::internal("tune: cannot write the log '" + log + "'"));

    const auto start = std::chrono::steady_clock::now();
    bool out_of_time = false;
    int failures = 0, wrong = 0;
    for (const Task &t : tasks) {
        // The reference result: the AOT kernel (convgrad's tested default schedule).
        auto reference = bench::ConvgradGradient::create(t.p, t.d, Device::kCpu, Backend::kAot);
        if (!reference.is_ok() || !reference.value->execute()) {
            return report(Status::internal("tune: " + t.problem + " " + t.dir + ": the AOT kernel failed"));
        }
        for (const std::string &cand : candidates(t.variant, isa)) {
            const std::string key = measurement_key(t.line, t.dir, dtype, cand);
            done++;
            if (measured.count(key)) continue;
            if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > budget) {
                out_of_time = true;
                break;
            }
            progress_bar(done, total, t.problem + " " + t.dir + " " + (cand.empty() ? "defaults" : cand));
            if (Status s = use_candidate(cand); !s) return report(s);
            auto g = bench::ConvgradGradient::create(t.p, t.d, Device::kCpu, Backend::kJit);
            Status s = g.is_ok() ? g.value->execute() : g.status;  // compiles
            if (!s) {  // a candidate that does not compile or run is skipped, and says why
                std::fprintf(stderr, "\ntune: %s %s %s: %s\n", t.problem.c_str(), t.dir.c_str(), cand.c_str(),
                             s.message().substr(0, 300).c_str());
                failures++;
                continue;
            }
            // Wrong results disqualify a candidate (logged, never chosen).
            const double err = g.value->relative_error_to(*reference.value);
            const bool correct = err <= tolerance(dtype);
            if (!correct) {
                std::fprintf(stderr, "\ntune: %s %s %s: wrong results (relative error %.3g), rejected\n", t.problem.c_str(),
                             t.dir.c_str(), cand.c_str(), err);
                wrong++;
            }
            const double ms = correct ? bench::median_ms([&] { g.value->execute(); }, min_time) : -1;
            measured[key] = ms;
            out << json{{"key", key}, {"problem", t.problem}, {"dir", t.dir}, {"variant", t.variant},
                        {"schedule", cand}, {"ms", ms}, {"relative_error", err}}.dump()
                << "\n" << std::flush;
        }
        if (out_of_time) break;
    }
    progress_bar(done, total, out_of_time ? "budget spent" : "done");
    std::fprintf(stderr, "\n");

    // Per variant: the candidate with the best geomean of default / candidate time over the
    // variant's problems (only candidates measured on all of them).
    std::map<std::string, std::vector<const Task *>> by_variant;
    for (const Task &t : tasks) by_variant[t.variant].push_back(&t);
    std::map<std::string, json> results;  // per variant tuned: the winner, or null (the defaults)
    std::printf("| variant | problems | best parameters | geomean speedup over defaults |\n|---|---|---|---|\n");
    for (const auto &[variant, ts] : by_variant) {
        // Candidates by gain, best first; the first that also passes the shape sweep wins.
        std::vector<std::pair<double, std::string>> ranked;
        for (const std::string &cand : candidates(variant, isa)) {
            if (cand.empty()) continue;
            double log_sum = 0;
            bool complete = true;
            for (const Task *t : ts) {
                auto d = measured.find(measurement_key(t->line, t->dir, dtype, ""));
                auto c = measured.find(measurement_key(t->line, t->dir, dtype, cand));
                if (d == measured.end() || c == measured.end() || d->second <= 0 || c->second <= 0) {  // <= 0: wrong
                    complete = false;
                    break;
                }
                log_sum += std::log(d->second / c->second);
            }
            const double gain = complete ? std::exp(log_sum / ts.size()) : 0;
            if (gain > 1.0) ranked.push_back({gain, cand});
        }
        std::sort(ranked.rbegin(), ranked.rend());
        // One pass over a shared machine is noisy: the finalists are measured again against
        // the defaults, interleaved, and ranked by that.
        if (!ranked.empty()) ranked = confirm(ts, ranked, min_time);
        // Only gains above measurement noise replace the defaults.
        while (!ranked.empty() && ranked.back().first <= 1.03) ranked.pop_back();
        std::string best;
        double best_gain = 1.0;
        for (const auto &[gain, cand] : ranked) {
            progress_bar(0, 0, "checking " + variant + " " + cand + " on other shapes");
            if (correct_on_other_shapes(*ts[0], variant, cand)) {
                best = cand, best_gain = gain;
                break;
            }
            std::fprintf(stderr, "\ntune: %s %s: wrong results on other shapes, not chosen\n", variant.c_str(), cand.c_str());
        }
        std::fprintf(stderr, "\n");
        std::printf("| %s | %zu | %s | %.3fx |\n", variant.c_str(), ts.size(), best.empty() ? "defaults" : best.c_str(),
                    best_gain);
        if (best.empty() && out_of_time) continue;  // not all measured: this path's earlier entry stays
        results[variant] = best.empty() ? json()
                                        : json{{"schedule", best}, {"problems", ts.size()}, {"geomean_speedup", best_gain}};
    }

    jit::disable();

    std::string command = "convgrad tune";
    for (int i = 0; i < argc; i++) command += std::string(" ") + argv[i];
    json old;
    if (std::ifstream in(db); in) old = json::parse(in, nullptr, false);
    const json run = {{"command", command}, {"dtype", dtype_name(dtype)}, {"measurements", measured.size()},
                      {"complete", !out_of_time}};
    const json j = merged_database(old, isa, run, results);
    const std::string tmp = db + ".tmp";
    {
        std::ofstream f(tmp);
        f << j.dump(2) << "\n";
        if (!f) return report(Status::internal("tune: cannot write '" + tmp + "'"));
    }
    std::rename(tmp.c_str(), db.c_str());
    std::fprintf(stderr, "tune: %zu measurements (%zu from the log), %d candidates failed, %d gave wrong results; wrote %s%s\n",
                 measured.size(), resumed, failures, wrong, db.c_str(), out_of_time ? " (budget spent: rerun to continue)" : "");
    return 0;
}

}  // namespace convgrad::cli
