// The benchmark: convgrad and oneDNN side by side on a batch of benchdnn problems, in the
// same process, same thread count, warm-up, median of repeats. Used by `convgrad bench` and
// by the Google Benchmark binary.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "benchdnn_desc.h"
#include "tensor_allocator.h"

namespace convgrad::bench {

// Median wall time (ms) of f() after one warm-up call: at least `min_reps` repeats and
// `min_time_s` seconds, at most 200 repeats.
double median_ms(const std::function<void()> &f, double min_time_s, int min_reps = 5);

// A convgrad gradient with its tensors allocated and filled with random values.
class ConvgradGradient {
public:
    // On a GPU (`device` cuda or opencl) the tensors live in its memory, uploaded once: a
    // call times the kernels (and their completion), not host-device copies.
    static Result<std::shared_ptr<ConvgradGradient>> create(const ConvProblem &p, Direction d,
                                                            Device device = Device::kCpu,
                                                            Backend backend = Backend::kAot);
    Status execute();
    std::string kernel() const;  // what runs now (with the JIT: "jit:..." once compiled)
    // ||result - other's|| / ||other's|| over the result values (CPU gradients of the same
    // problem: their inputs are the same, seeded). The tuner rejects candidates with this:
    // a schedule parameter can trip a Halide 14 bug that drops a reduction (zero results).
    double relative_error_to(const ConvgradGradient &other) const;

private:
    ConvProblem p_;
    Direction d_ = Direction::kBackwardData;
    RunOptions options_;
    TensorBytes a_, b_, out_;
    std::unique_ptr<DeviceMemory> device_[3];
    Tensor ta_, tb_, tout_;
};

struct SuiteOptions {
    std::string batch;
    bool data = true, weights = true;
    bool nchw = false;
    DType dtype = DType::kFloat32;
    Device device = Device::kCpu;  // GPU: convgrad only (compare with cuDNN: bench/cudnn_bench.py)
    Backend backend = Backend::kAot;  // kJit: kernels compiled for each problem (first call, untimed)
    // `convgrad autoschedule`: also time each problem's pipeline scheduled by this Halide
    // autoscheduler (compiled through the JIT, which the caller enabled with it).
    std::string autoscheduler;
    double min_time_s = 0.3;
    int threads = 2;
};

struct Row {
    std::string name, problem_class, direction, line, kernel;
    ConvProblem problem;
    double flops = 0;
    double convgrad_ms = 0;
    double first_call_ms = 0;  // convgrad's first call: with the JIT, its compile (or cache load)
    double aot_ms = 0;                // JIT runs: the AOT kernel too, in the same run
    double autoscheduled_ms = 0;      // 0: not run, or failed (autoscheduled_error)
    std::string autoscheduled_error;
    double onednn_user_ms = 0, onednn_own_ms = 0;  // 0: oneDNN has no implementation
    double onednn_winograd_ms = 0;                 // its own layouts; 0: no Winograd for the layer
    std::string onednn_user_impl, onednn_own_impl, onednn_winograd_impl;
    // The target's comparison: oneDNN's direct convolution, the better of its two layouts.
    double best_onednn_ms() const;
    double ratio() const;  // best oneDNN time / convgrad time (> 1: convgrad faster); 0 if none
    // The same with oneDNN's Winograd too, where it has one: its fastest on the layer.
    double fastest_onednn_ms() const;
    double ratio_fastest() const;
};

struct SuiteResult {
    double peak_gflops = 0;
    std::string peak_isa;
    std::vector<Row> rows;
};

// Runs every problem; `progress` gets one line per measurement.
Result<SuiteResult> run_suite(const SuiteOptions &o, const std::function<void(const std::string &)> &progress);

std::string format_table(const SuiteOptions &o, const SuiteResult &r);
std::string format_json(const SuiteOptions &o, const SuiteResult &r);

}  // namespace convgrad::bench
