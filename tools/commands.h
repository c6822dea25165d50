// The CLI's subcommands. Each returns the process exit code:
// 0 ok, 2 invalid input, 3 unsupported, 1 failure while running or writing.
#pragma once

#include "convgrad/status.h"

namespace convgrad::cli {

int run_command(int argc, char **argv);   // argv[0] is the op name
int info_command(int argc, char **argv);
int bench_command(int argc, char **argv);  // argv[0] is the first option
int aot_command(int argc, char **argv);    // argv[0] is the first option
int autoschedule_command(int argc, char **argv);  // argv[0] is the first option
int tune_command(int argc, char **argv);   // argv[0] is the first option

int exit_code(const Status &s);
int report(const Status &s);              // prints "convgrad: <message>" to stderr, returns exit_code
int report_invalid(const std::string &message);

}  // namespace convgrad::cli
