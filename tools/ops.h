// The CLI's op table: each op names its arguments exactly as its spec spells them and says
// how its attributes resolve into a ConvProblem (through the runtime's frontends) and which
// gradient to run. Adding a frontend's op is adding a row.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "convgrad/convgrad.h"
#include "npy.h"

namespace convgrad::cli {

// One op's parsed command line.
struct OpArgs {
    std::map<std::string, npy::Array> tensors;           // loaded .npy files
    std::map<std::string, std::vector<int64_t>> ints;    // comma-separated integer lists
    std::map<std::string, std::string> strings;          // given string arguments only

    const std::vector<int64_t> &int_list(const std::string &name) const;  // empty if absent
    std::string string_or(const std::string &name, const std::string &fallback) const;
    // A single integer (e.g. --groups 2); `fallback` when absent; an error if a list.
    Result<int64_t> scalar(const std::string &name, int64_t fallback) const;
    Shape shape(const std::string &tensor) const;
};

// What an op resolves to: the problem, the direction, and which two tensors feed it
// (backward_data takes dy then w; backward_weights takes x then dy).
struct OpCall {
    ConvProblem problem;
    Direction direction = Direction::kBackwardData;
    std::string first, second;
};

struct OpSpec {
    std::string name;
    std::vector<std::string> tensor_args;   // all required
    std::vector<std::string> int_args;      // int lists; `required_args` says which are required
    std::vector<std::string> string_args;
    std::vector<std::string> required_args; // among int_args and string_args
    std::function<Result<OpCall>(const OpArgs &, DType)> resolve;
};

const std::vector<OpSpec> &op_table();
const OpSpec *find_op(const std::string &name);

// Rows contributed by each frontend.
void add_tf_ops(std::vector<OpSpec> &table);
void add_onednn_ops(std::vector<OpSpec> &table);
void add_onnx_ops(std::vector<OpSpec> &table);

}  // namespace convgrad::cli
