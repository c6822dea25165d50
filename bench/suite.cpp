#include "suite.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "onednn_runner.h"
#include "peak.h"

namespace convgrad::bench {

double median_ms(const std::function<void()> &f, double min_time_s, int min_reps) {
    // Idle first: the previous measurement's threads (the other library's, or this one's)
    // spin for up to ~7 ms after their last task (libgomp's default), on the cores this one
    // is about to use.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f();  // warm-up: first-touch, caches, oneDNN's JIT
    std::vector<double> t;
    double total = 0;
    while ((static_cast<int>(t.size()) < min_reps || total < min_time_s) && t.size() < 200) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        t.push_back(s * 1e3);
        total += s;
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
}

Result<std::shared_ptr<ConvgradGradient>> ConvgradGradient::create(const ConvProblem &p, Direction d, Device device,
                                                                   Backend backend) {
    auto g = std::make_shared<ConvgradGradient>();
    g->p_ = p, g->d_ = d;
    g->options_.device = device;
    g->options_.backend = backend;
    const OperandShapes shapes = operand_shapes(d, p);
    const int size = dtype_size(p.dtype);
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> byte(0, 255);
    auto alloc = [&](TensorBytes &buf, const Shape &s, Tensor &t) {
        buf.resize(num_elements(s) * size);
        // Small random values: float bits with a fixed moderate exponent, random mantissa.
        for (size_t i = 0; i < buf.size(); i++) buf[i] = static_cast<unsigned char>(byte(rng));
        if (p.dtype == DType::kFloat32) {
            for (size_t i = 3; i < buf.size(); i += 4) buf[i] = 0x3f;
        } else if (p.dtype == DType::kFloat64) {
            for (size_t i = 7; i < buf.size(); i += 8) buf[i] = 0x3f, buf[i - 1] = 0xe0 | (buf[i - 1] & 0x0f);
        } else if (p.dtype == DType::kFloat16 || p.dtype == DType::kBFloat16) {
            for (size_t i = 1; i < buf.size(); i += 2) buf[i] = p.dtype == DType::kFloat16 ? 0x38 : 0x3f;
        } else if (p.dtype == DType::kInt32) {
            // -128..127 (8-bit quantised data's range), so the sums stay within float64's
            // exact integers and the call takes the float64 kernels, as int32 data of that
            // size does (execute.cpp: run_widened); random bytes would sit near 2^31.
            for (size_t i = 0; i + 3 < buf.size(); i += 4) buf[i + 1] = buf[i + 2] = buf[i + 3] = buf[i] & 0x80 ? 0xff : 0;
        }
        t = Tensor{buf.data(), p.dtype, s, {}};
    };
    alloc(g->a_, shapes.a, g->ta_);
    alloc(g->b_, shapes.b, g->tb_);
    alloc(g->out_, shapes.result, g->tout_);
    if (device == Device::kCuda || device == Device::kOpenCL) {
        std::pair<TensorBytes *, Tensor *> host[3] = {{&g->a_, &g->ta_}, {&g->b_, &g->tb_},
                                                                     {&g->out_, &g->tout_}};
        for (int i = 0; i < 3; i++) {
            auto m = DeviceMemory::allocate(device, host[i].first->size());
            if (!m.is_ok()) return m.status;
            if (Status s = m.value->upload(host[i].first->data()); !s) return s;
            host[i].second->data = m.value->handle();
            host[i].second->device = device;
            g->device_[i] = std::move(m.value);
        }
    }
    auto k = select_kernel(d, p, g->ta_, g->tb_, g->tout_, g->options_);
    if (!k.is_ok()) return k.status;
    return g;
}

// One result element as a double (the bench's tensors are contiguous).
static double element(DType t, const unsigned char *p) {
    switch (t) {
    case DType::kFloat32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
    }
    case DType::kFloat64: {
        double v;
        std::memcpy(&v, p, 8);
        return v;
    }
    case DType::kFloat16: {
        _Float16 v;
        std::memcpy(&v, p, 2);
        return static_cast<double>(v);
    }
    case DType::kBFloat16: {
        uint32_t bits = static_cast<uint32_t>(p[0] | (p[1] << 8)) << 16;
        float v;
        std::memcpy(&v, &bits, 4);
        return v;
    }
    case DType::kInt32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
    }
    }
    return 0;
}

double ConvgradGradient::relative_error_to(const ConvgradGradient &other) const {
    if (out_.size() != other.out_.size() || p_.dtype != other.p_.dtype) return INFINITY;
    const int size = dtype_size(p_.dtype);
    double diff = 0, norm = 0;
    for (size_t i = 0; i + size <= out_.size(); i += size) {
        const double a = element(p_.dtype, &out_[i]), b = element(p_.dtype, &other.out_[i]);
        if (!std::isfinite(a)) return INFINITY;
        diff += (a - b) * (a - b), norm += b * b;
    }
    return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

std::string ConvgradGradient::kernel() const {
    auto k = select_kernel(d_, p_, ta_, tb_, tout_, options_);
    return k.is_ok() ? k.value : "?";
}

Status ConvgradGradient::execute() {
    return d_ == Direction::kBackwardData ? backward_data(p_, ta_, tb_, tout_, options_)
                                          : backward_weights(p_, ta_, tb_, tout_, options_);
}

double Row::best_onednn_ms() const {
    double best = 0;
    for (double t : {onednn_user_ms, onednn_own_ms}) {
        if (t > 0 && (best == 0 || t < best)) best = t;
    }
    return best;
}

double Row::ratio() const { return best_onednn_ms() > 0 ? best_onednn_ms() / convgrad_ms : 0; }

double Row::fastest_onednn_ms() const {
    const double best = best_onednn_ms();
    return onednn_winograd_ms > 0 && (best == 0 || onednn_winograd_ms < best) ? onednn_winograd_ms : best;
}

double Row::ratio_fastest() const { return fastest_onednn_ms() > 0 ? fastest_onednn_ms() / convgrad_ms : 0; }

// A time for the tables: "n/a" where there is none.
static std::string ms_text(double v) {
    if (v <= 0) return "n/a";
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", v);
    return b;
}

// A ratio for the tables ("1.234x"), or `none` where there is none.
static std::string ratio_text(double v, const char *none) {
    return v > 0 ? std::to_string(v).substr(0, 5) + "x" : std::string(none);
}

// The same gradient scheduled by a Halide autoscheduler (JIT-compiled for the problem). An
// autoscheduler that fails on a problem is a result of the experiment, not an error.
static void time_autoscheduled(const ConvProblem &p, Direction d, const SuiteOptions &o, Row &row) {
    auto g = ConvgradGradient::create(p, d, Device::kCpu, Backend::kJit);
    Status s = g.is_ok() ? g.value->execute() : g.status;  // compiles
    if (!s) {
        row.autoscheduled_error = s.message();
        return;
    }
    row.autoscheduled_ms = median_ms([&] { g.value->execute(); }, o.min_time_s);
}

Result<SuiteResult> run_suite(const SuiteOptions &o, const std::function<void(const std::string &)> &progress) {
    auto problems = parse_batch(o.batch);
    if (!problems.is_ok()) return problems.status;
    set_num_threads(o.threads);
    omp_set_num_threads(o.threads);
    SuiteResult result;
    const bool cpu = o.device == Device::kCpu;
    if (cpu) {  // the CPU's FMA peak; GPU runs report GFLOP/s only
        const Peak peak = measure_fma_peak(o.threads, o.dtype == DType::kFloat64);
        result.peak_gflops = peak.gflops;
        result.peak_isa = peak.isa;
    }
    std::vector<Direction> dirs;
    if (o.data) dirs.push_back(Direction::kBackwardData);
    if (o.weights) dirs.push_back(Direction::kBackwardWeights);
    for (const BenchProblem &b : problems.value) {
        const ConvProblem p = to_problem(b, o.nchw, o.dtype);
        if (Status s = validate(p); !s) return Status(s.code(), b.name + ": " + s.message());
        for (Direction d : dirs) {
            Row row;
            row.name = b.name, row.problem_class = b.problem_class(), row.line = b.line, row.flops = b.flops();
            row.problem = p;
            row.direction = d == Direction::kBackwardData ? "BWD_D" : "BWD_W";
            auto cg = ConvgradGradient::create(p, d, o.device, o.backend);
            if (!cg.is_ok()) return Status(cg.status.code(), b.name + ": " + cg.status.message());
            Status failure;
            const auto t0 = std::chrono::steady_clock::now();
            failure = cg.value->execute();
            row.first_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (!failure) return Status(failure.code(), b.name + ": " + failure.message());
            row.kernel = cg.value->kernel();
            row.convgrad_ms = median_ms([&] { if (Status s = cg.value->execute(); !s) failure = s; }, o.min_time_s);
            if (!failure) return Status(failure.code(), b.name + ": " + failure.message());
            if (!o.autoscheduler.empty()) time_autoscheduled(p, d, o, row);
            if (o.backend == Backend::kJit) {  // the AOT kernel beside it
                auto aot = ConvgradGradient::create(p, d, o.device, Backend::kAot);
                if (aot.is_ok()) row.aot_ms = median_ms([&] { aot.value->execute(); }, o.min_time_s);
            }
            // (kOneDnnVariants' order: user layout, own layout, Winograd.)
            double *const dnn_ms[] = {&row.onednn_user_ms, &row.onednn_own_ms, &row.onednn_winograd_ms};
            std::string *const dnn_impl[] = {&row.onednn_user_impl, &row.onednn_own_impl, &row.onednn_winograd_impl};
            for (size_t i = 0; i < std::size(kOneDnnVariants); i++) {
                if (!cpu) break;  // oneDNN runs on the CPU: no comparison for GPU runs
                const OneDnnVariant &v = kOneDnnVariants[i];
                auto dnn = OneDnnGradient::create(p, d, v.own_layout, v.algorithm);
                if (!dnn.is_ok()) continue;  // no oneDNN implementation: reported as n/a
                *dnn_impl[i] = dnn.value->impl();
                *dnn_ms[i] = median_ms([&] { dnn.value->execute(); }, o.min_time_s);
            }
            char line[256];
            std::string extra;
            if (!o.autoscheduler.empty()) {
                extra = "  " + o.autoscheduler + " " +
                        (row.autoscheduled_ms > 0 ? std::to_string(row.autoscheduled_ms) + " ms" : "failed");
            }
            if (row.onednn_winograd_ms > 0) {
                extra = "  Winograd " + ms_text(row.onednn_winograd_ms) + " ms" + extra;
            }
            std::snprintf(line, sizeof line, "%-16s %s convgrad %8.3f ms  oneDNN user %8.3f / own %8.3f ms%s", b.name.c_str(),
                          row.direction.c_str(), row.convgrad_ms, row.onednn_user_ms, row.onednn_own_ms, extra.c_str());
            progress(line);
            result.rows.push_back(row);
        }
    }
    return result;
}

namespace {

// Geomean of oneDNN time / convgrad time per class and direction, and over everything per
// direction; `onednn_ms` picks which oneDNN time (best of both layouts, or the user layout).
std::map<std::string, double> geomeans(const SuiteResult &r, const std::string &direction,
                                       double (*onednn_ms)(const Row &)) {
    std::map<std::string, std::pair<double, int>> acc;
    for (const Row &row : r.rows) {
        const double ratio = onednn_ms(row) / row.convgrad_ms;
        if (row.direction != direction || !(ratio > 0)) continue;
        for (const std::string &key : {row.problem_class, std::string("all")}) {
            acc[key].first += std::log(ratio);
            acc[key].second++;
        }
    }
    std::map<std::string, double> out;
    for (const auto &[k, v] : acc) out[k] = std::exp(v.first / v.second);
    return out;
}

double best_onednn(const Row &row) { return row.best_onednn_ms(); }
double fastest_onednn(const Row &row) { return row.fastest_onednn_ms(); }
double user_onednn(const Row &row) { return row.onednn_user_ms; }

}  // namespace

std::string format_table(const SuiteOptions &o, const SuiteResult &r) {
    std::ostringstream os;
    char buf[512];
    if (o.device == Device::kCpu) {
        std::snprintf(buf, sizeof buf, "convgrad (%s) vs oneDNN %s, %s, %s, %d threads; peak %.0f GFLOP/s (%s, measured)\n\n",
                      o.backend == Backend::kJit ? "JIT" : "AOT", dnnl_version_string().c_str(), dtype_name(o.dtype),
                      o.nchw ? "NCHW/OIHW" : "NHWC/HWIO", o.threads, r.peak_gflops, r.peak_isa.c_str());
    } else {
        std::snprintf(buf, sizeof buf, "convgrad on %s, %s, %s; tensors in device memory (oneDNN: CPU only, not run)\n\n",
                      device_name(o.device), dtype_name(o.dtype), o.nchw ? "NCHW/OIHW" : "NHWC/HWIO");
    }
    os << buf;
    os << "| problem | class | dir | convgrad ms | GFLOP/s | % peak | oneDNN user ms | oneDNN own ms | best oneDNN / convgrad "
          "| oneDNN Winograd ms | fastest oneDNN / convgrad |\n";
    os << "|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const Row &row : r.rows) {
        const double gflops = row.flops / row.convgrad_ms * 1e-6;
        std::snprintf(buf, sizeof buf, "| %s | %s | %s | %.3f | %.1f | %.1f | %s | %s | %s | %s | %s |\n", row.name.c_str(),
                      row.problem_class.c_str(), row.direction.c_str(), row.convgrad_ms, gflops,
                      r.peak_gflops > 0 ? 100 * gflops / r.peak_gflops : 0.0, ms_text(row.onednn_user_ms).c_str(),
                      ms_text(row.onednn_own_ms).c_str(), ratio_text(row.ratio(), "n/a").c_str(),
                      ms_text(row.onednn_winograd_ms).c_str(), ratio_text(row.ratio_fastest(), "n/a").c_str());
        os << buf;
    }
    if (!o.autoscheduler.empty()) {
        os << "\n" << o.autoscheduler << " (Halide 14's autoscheduler, JIT-compiled for each problem) beside convgrad's "
           << "schedules and oneDNN:\n\n| problem | dir | convgrad ms | " << o.autoscheduler
           << " ms | best oneDNN ms | " << o.autoscheduler << " / convgrad |\n|---|---|---|---|---|---|\n";
        for (const Row &row : r.rows) {
            const bool ok = row.autoscheduled_ms > 0;
            std::snprintf(buf, sizeof buf, "| %s | %s | %.3f | %s | %s | %s |\n", row.name.c_str(), row.direction.c_str(),
                          row.convgrad_ms, ok ? ms_text(row.autoscheduled_ms).c_str() : "failed",
                          ms_text(row.best_onednn_ms()).c_str(),
                          ratio_text(ok ? row.autoscheduled_ms / row.convgrad_ms : 0, "-").c_str());
            os << buf;
        }
        for (const Row &row : r.rows) {
            if (!row.autoscheduled_error.empty()) {
                os << "\n" << row.name << " " << row.direction << ": " << row.autoscheduled_error.substr(0, 300) << "\n";
            }
        }
    }
    if (o.backend == Backend::kJit) {
        os << "\nJIT (specialised to each problem) against the AOT kernel, same run:\n\n"
              "| problem | dir | JIT ms | AOT ms | AOT / JIT | JIT first call ms |\n|---|---|---|---|---|---|\n";
        double log_sum = 0;
        int n = 0;
        for (const Row &row : r.rows) {
            std::snprintf(buf, sizeof buf, "| %s | %s | %.3f | %s | %s | %.0f |\n", row.name.c_str(), row.direction.c_str(),
                          row.convgrad_ms, ms_text(row.aot_ms).c_str(),
                          ratio_text(row.aot_ms / row.convgrad_ms, "-").c_str(),
                          row.first_call_ms);
            os << buf;
            if (row.aot_ms > 0) log_sum += std::log(row.aot_ms / row.convgrad_ms), n++;
        }
        if (n > 0) {
            std::snprintf(buf, sizeof buf, "\nGeomean AOT time / JIT time: %.3fx over %d rows\n", std::exp(log_sum / n), n);
            os << buf;
        }
        double total = 0;
        for (const Row &row : r.rows) total += row.first_call_ms;
        std::snprintf(buf, sizeof buf, "\nJIT first calls (compile, or load from the disk cache): %.0f ms in all, %.0f ms per kernel\n",
                      total, r.rows.empty() ? 0.0 : total / r.rows.size());
        os << buf;
    }
    if (o.device != Device::kCpu) return os.str();  // no oneDNN times to compare (bench/cudnn_bench.py does, for CUDA)
    os << "\nGeomean of oneDNN time / convgrad time (> 1: convgrad faster), against the better of oneDNN's two\n"
          "layouts (the target), against oneDNN on the user's layout (what a caller gets without reorders), and\n"
          "against oneDNN's fastest (its Winograd too, on the layers that have one):\n\n"
          "| class | BWD_D vs best | BWD_W vs best | BWD_D vs user layout | BWD_W vs user layout "
          "| BWD_D vs fastest | BWD_W vs fastest |\n|---|---|---|---|---|---|---|\n";
    const auto bd = geomeans(r, "BWD_D", best_onednn), bw = geomeans(r, "BWD_W", best_onednn);
    const auto ud = geomeans(r, "BWD_D", user_onednn), uw = geomeans(r, "BWD_W", user_onednn);
    const auto fd = geomeans(r, "BWD_D", fastest_onednn), fw = geomeans(r, "BWD_W", fastest_onednn);
    for (const char *cls : {"dense", "strided", "dilated", "grouped", "depthwise", "3d", "all"}) {
        auto get = [&](const std::map<std::string, double> &m) {
            auto it = m.find(cls);
            return ratio_text(it == m.end() ? 0 : it->second, "-");
        };
        os << "| " << cls << " | " << get(bd) << " | " << get(bw) << " | " << get(ud) << " | " << get(uw) << " | " << get(fd)
           << " | " << get(fw) << " |\n";
    }
    return os.str();
}

// The canonical problem, so other tools (bench/cudnn_bench.py) time exactly the same one
// without parsing benchdnn descriptors again. Spatial lists are outermost first (D, H, W).
static nlohmann::json problem_json(const ConvProblem &p) {
    auto spatial = [&](const SpatialDims &v) { return std::vector<int64_t>(v.begin(), v.begin() + p.spatial_rank); };
    return {{"batch", p.batch},
            {"groups", p.groups},
            {"in_channels", p.in_channels},
            {"out_channels", p.out_channels},
            {"input_size", spatial(p.input_size)},
            {"output_size", spatial(p.output_size)},
            {"kernel_size", spatial(p.kernel_size)},
            {"strides", spatial(p.strides)},
            {"dilations", spatial(p.dilations)},
            {"pads_begin", spatial(p.pads_begin)},
            {"pads_end", spatial(p.pads_end)}};
}

std::string format_json(const SuiteOptions &o, const SuiteResult &r) {
    nlohmann::json j;
    j["dtype"] = dtype_name(o.dtype);
    j["layout"] = o.nchw ? "nchw" : "nhwc";
    j["threads"] = o.threads;
    j["device"] = device_name(o.device);
    j["backend"] = o.backend == Backend::kJit ? "jit" : "aot";
    if (!o.autoscheduler.empty()) j["autoscheduler"] = o.autoscheduler;
    j["peak_gflops"] = r.peak_gflops;
    j["peak_isa"] = r.peak_isa;
    j["onednn_version"] = dnnl_version_string();
    for (const Row &row : r.rows) {
        const double gflops = row.flops / row.convgrad_ms * 1e-6;
        j["results"].push_back({{"name", row.name},
                                {"class", row.problem_class},
                                {"dir", row.direction},
                                {"descriptor", row.line},
                                {"problem", problem_json(row.problem)},
                                {"convgrad_kernel", row.kernel},
                                {"convgrad_ms", row.convgrad_ms},
                                {"convgrad_first_call_ms", row.first_call_ms},
                                {"aot_ms", row.aot_ms > 0 ? nlohmann::json(row.aot_ms) : nullptr},
                                {"autoscheduled_ms", row.autoscheduled_ms > 0 ? nlohmann::json(row.autoscheduled_ms) : nullptr},
                                {"gflops", gflops},
                                {"pct_peak", r.peak_gflops > 0 ? nlohmann::json(100 * gflops / r.peak_gflops) : nullptr},
                                {"onednn_user_ms", row.onednn_user_ms > 0 ? nlohmann::json(row.onednn_user_ms) : nullptr},
                                {"onednn_own_ms", row.onednn_own_ms > 0 ? nlohmann::json(row.onednn_own_ms) : nullptr},
                                {"onednn_user_impl", row.onednn_user_impl},
                                {"onednn_own_impl", row.onednn_own_impl},
                                {"onednn_winograd_ms", row.onednn_winograd_ms > 0 ? nlohmann::json(row.onednn_winograd_ms) : nullptr},
                                {"onednn_winograd_impl", row.onednn_winograd_impl},
                                {"ratio_best_onednn_over_convgrad", row.ratio() > 0 ? nlohmann::json(row.ratio()) : nullptr},
                                {"ratio_fastest_onednn_over_convgrad",
                                 row.ratio_fastest() > 0 ? nlohmann::json(row.ratio_fastest()) : nullptr}});
    }
    for (const char *dir : {"BWD_D", "BWD_W"}) {
        for (const auto &[cls, g] : geomeans(r, dir, best_onednn)) j["geomean_vs_best_onednn"][dir][cls] = g;
        for (const auto &[cls, g] : geomeans(r, dir, user_onednn)) j["geomean_vs_user_layout_onednn"][dir][cls] = g;
        for (const auto &[cls, g] : geomeans(r, dir, fastest_onednn)) j["geomean_vs_fastest_onednn"][dir][cls] = g;
    }
    return j.dump(2);
}

}  // namespace convgrad::bench
