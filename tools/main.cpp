// The convgrad command-line tool.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "commands.h"

namespace convgrad::cli {

int exit_code(const Status &s) {
    switch (s.code()) {
    case StatusCode::kOk: return 0;
    case StatusCode::kInvalidArgument: return 2;
    case StatusCode::kUnsupported: return 3;
    case StatusCode::kInternal: return 1;
    }
    return 1;
}

int report(const Status &s) {
    std::fprintf(stderr, "convgrad: %s\n", s.message().c_str());
    return exit_code(s);
}

int report_invalid(const std::string &message) { return report(Status::invalid(message)); }

}  // namespace convgrad::cli

namespace {

const char *kUsage =
    "usage: convgrad <command> ...\n"
    "  run <Op> [--<argument> <value>]... --output <path.npy>   compute one gradient\n"
    "  info                                                     kernels, CPU features, ISA path\n"
    "  bench --batch FILE [--dir ..] [--layout ..] [--dtype ..] [--device ..] [--backend aot|jit]\n"
    "                                                           convgrad vs oneDNN, side by side\n"
    "  aot --target T [--ops ..] [--dtypes ..] [--layouts ..] -o DIR   a kernel library for any target\n"
    "  autoschedule --autoscheduler Mullapudi2016|Adams2019|Li2018 --batch FILE [bench options]\n"
    "                                                           Halide's autoschedulers beside convgrad and oneDNN\n"
    "  tune --batch FILE [--budget S] [--dir ..] [--layout ..] [--db PATH]\n"
    "                                                           search the schedules' parameters (writes schedules/tuned/)\n"
    "Ops: TensorFlow Conv2DBackpropInput, Conv2DBackpropFilter, DepthwiseConv2dNativeBackpropInput,\n"
    "     DepthwiseConv2dNativeBackpropFilter, Conv3DBackpropInputV2, Conv3DBackpropFilterV2;\n"
    "     oneDNN Graph ConvolutionBackpropData, ConvolutionBackpropFilters; ONNX ConvTranspose.\n"
    "     `convgrad run <Op> --help` lists an op's arguments.\n";

}  // namespace

int main(int argc, char **argv) {
    using namespace convgrad::cli;
    try {
        if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
            std::fputs(kUsage, argc < 2 ? stderr : stdout);
            return argc < 2 ? 2 : 0;
        }
        const std::string command = argv[1];
        if (command == "run") return run_command(argc - 2, argv + 2);
        if (command == "info") return info_command(argc - 2, argv + 2);
        if (command == "bench") return bench_command(argc - 2, argv + 2);
        if (command == "aot") return aot_command(argc - 2, argv + 2);
        if (command == "autoschedule") return autoschedule_command(argc - 2, argv + 2);
        if (command == "tune") return tune_command(argc - 2, argv + 2);
        return report_invalid("unknown command '" + command + "'\n" + kUsage);
    } catch (const std::bad_alloc &) {
        return report(convgrad::Status::internal("out of memory"));
    } catch (const std::exception &e) {
        return report(convgrad::Status::internal(std::string("unexpected error: ") + e.what()));
    }
}
