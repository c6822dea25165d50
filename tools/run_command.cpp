// convgrad run <Op> [--<argument> <value>]... --output <path.npy>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <sstream>

#include "commands.h"
#include "convgrad/jit.h"
#include "ops.h"

namespace convgrad::cli {
namespace {

Result<std::vector<int64_t>> parse_int_list(const std::string &arg, const std::string &text) {
    std::vector<int64_t> out;
    if (text.empty()) return out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (used == 0 || used != item.size()) {
            return Status::invalid("--" + arg + ": '" + text + "' is not a comma-separated list of integers");
        }
        out.push_back(v);
    }
    if (text.back() == ',') return Status::invalid("--" + arg + ": trailing comma in '" + text + "'");
    return out;
}

Result<Device> device_arg(const std::string &s) {
    Device d;
    if (parse_device(s, &d)) return d;
    return Status::invalid("--device: must be cpu, cuda, opencl or auto, got '" + s + "'");
}

Result<Backend> parse_backend(const std::string &s) {
    if (s == "auto") return Backend::kAuto;
    if (s == "aot") return Backend::kAot;
    if (s == "jit") return Backend::kJit;
    return Status::invalid("--backend: must be auto, aot or jit, got '" + s + "'");
}

// The compute dtype is the tensors' dtype; all of one call's tensors must agree. bfloat16 has
// no .npy dtype: it travels as uint16 holding the raw bits, marked by --dtype bfloat16.
Result<DType> common_dtype(const OpSpec &op, const OpArgs &args, const std::string &dtype_arg) {
    std::string first_arg, first_descr;
    for (const std::string &name : op.tensor_args) {
        const std::string &descr = args.tensors.at(name).descr;
        if (first_arg.empty()) {
            first_arg = name, first_descr = descr;
        } else if (descr != first_descr) {
            return Status::invalid("--" + name + ": dtype '" + descr + "' differs from --" + first_arg + "'s '" +
                                   first_descr + "'");
        }
    }
    DType from_file;
    const bool known = npy::dtype_of(first_descr, dtype_arg == "bfloat16", &from_file);
    if (!dtype_arg.empty()) {
        DType wanted;
        if (!parse_dtype(dtype_arg, &wanted)) {
            return Status::invalid("--dtype: must be float16, bfloat16, float32, float64 or int32, got '" + dtype_arg + "'");
        }
        if (!known || from_file != wanted) {
            return Status::invalid("--dtype: " + dtype_arg + " needs tensors of dtype '" + npy::descr_of(wanted) +
                                   "', but --" + first_arg + " is '" + first_descr + "'");
        }
    }
    if (!known) {
        return Status::invalid("--" + first_arg + ": dtype '" + first_descr + "' is not one of float16, float32, " +
                               "float64, int32" + (first_descr == "<u2" ? " (uint16 holding bfloat16 needs --dtype bfloat16)" : ""));
    }
    return from_file;
}

Status execute(const OpCall &call, OpArgs &args, DType dtype, const RunOptions &options, const std::string &output) {
    const ConvProblem &p = call.problem;
    const Shape result_shape = call.direction == Direction::kBackwardData ? input_shape(p) : filter_shape(p);
    std::vector<unsigned char> result(static_cast<size_t>(num_elements(result_shape)) * dtype_size(dtype));
    Tensor out{result.data(), dtype, result_shape, {}};
    const Tensor a = args.tensors.at(call.first).tensor(dtype), b = args.tensors.at(call.second).tensor(dtype);
    Status s = call.direction == Direction::kBackwardData ? backward_data(p, a, b, out, options)
                                                          : backward_weights(p, a, b, out, options);
    if (!s) return s;
    // Write beside the target, then rename: a failed run never leaves a (partial) output.
    const std::string tmp = output + ".tmp." + std::to_string(getpid());
    s = npy::write(tmp, dtype, result_shape, result.data());
    if (s && std::rename(tmp.c_str(), output.c_str()) != 0) {
        s = Status::internal("--output: cannot rename to '" + output + "'");
    }
    if (!s) std::remove(tmp.c_str());
    return s;
}

}  // namespace

int run_command(int argc, char **argv) {
    if (argc < 1) return report_invalid("run: missing <Op>; usage: convgrad run <Op> [--<argument> <value>]... --output <path.npy>");
    const OpSpec *op = find_op(argv[0]);
    if (op == nullptr) {
        std::string known;
        for (const OpSpec &o : op_table()) known += (known.empty() ? "" : ", ") + o.name;
        return report_invalid(std::string("run: unknown op '") + argv[0] + "' (known: " + known + ")");
    }

    CLI::App app{"convgrad run " + op->name, op->name};
    std::map<std::string, std::string> raw;
    auto add = [&](const std::string &name, const std::string &help) {
        app.add_option("--" + name, raw[name], help);
    };
    for (const auto &n : op->tensor_args) add(n, "tensor (.npy)");
    for (const auto &n : op->int_args) add(n, "comma-separated integers");
    for (const auto &n : op->string_args) add(n, "string");
    std::string output, device = "cpu", backend = "auto", dtype_arg;
    app.add_option("--output", output, "result (.npy)");
    app.add_option("--device", device, "cpu (default), cuda, opencl, auto (a CUDA GPU if there is one, else cpu)");
    app.add_option("--backend", backend, "auto (default: a JIT kernel if one is cached, else AOT), aot, jit (compile for this problem; cached)");
    app.add_option("--dtype", dtype_arg, "bfloat16 for uint16 .npy tensors holding bfloat16 bits; else checks the tensors' dtype");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        return report_invalid(op->name + ": " + e.what());
    }

    auto given = [&](const std::string &name) { return app.count("--" + name) > 0; };
    OpArgs args;
    for (const auto &n : op->tensor_args) {
        if (!given(n)) return report_invalid(op->name + ": --" + n + ": required");
    }
    for (const auto &n : op->required_args) {
        if (!given(n)) return report_invalid(op->name + ": --" + n + ": required");
    }
    if (output.empty()) return report_invalid(op->name + ": --output: required");
    auto dev = device_arg(device);
    if (!dev.is_ok()) return report(dev.status);
    auto be = parse_backend(backend);
    if (!be.is_ok()) return report(be.status);
    for (const auto &n : op->int_args) {
        if (!given(n)) continue;
        auto v = parse_int_list(n, raw[n]);
        if (!v.is_ok()) return report(Status(v.status.code(), op->name + ": " + v.status.message()));
        args.ints[n] = v.value;
    }
    for (const auto &n : op->string_args) {
        if (given(n)) args.strings[n] = raw[n];
    }
    for (const auto &n : op->tensor_args) {
        auto a = npy::read(raw[n], "--" + n);
        if (!a.is_ok()) return report(Status(a.status.code(), op->name + ": " + a.status.message()));
        args.tensors[n] = std::move(a.value);
    }
    auto dtype = common_dtype(*op, args, dtype_arg);
    if (!dtype.is_ok()) return report(Status(dtype.status.code(), op->name + ": " + dtype.status.message()));
    auto call = op->resolve(args, dtype.value);
    if (!call.is_ok()) return report(call.status);
    RunOptions options;
    options.device = dev.value;
    options.backend = be.value;
    // jit compiles for this exact problem (cached on disk); auto uses such a kernel when one
    // is cached, else the AOT kernel.
    if (be.value != Backend::kAot) {
        if (Status s = jit::enable(); !s) return report(s);
    }
    Status s = execute(call.value, args, dtype.value, options, output);
    if (!s) return report(Status(s.code(), op->name + ": " + s.message()));
    return 0;
}

}  // namespace convgrad::cli
