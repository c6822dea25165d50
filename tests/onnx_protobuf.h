// Just enough of the protobuf wire format to read ONNX node tests: a model's first node
// (op type and attributes) and TensorProto .pb files (float32).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace convgrad::test::onnx_pb {

struct Node {
    std::string op_type;
    std::map<std::string, std::vector<int64_t>> ints;   // INT and INTS attributes
    std::map<std::string, std::string> strings;         // STRING attributes
};

struct Tensor {
    std::vector<int64_t> dims;
    int32_t data_type = 0;  // 1 = FLOAT
    std::vector<float> values;
};

// Return false (with `error` set) on malformed input.
bool read_first_node(const std::string &model_path, Node *node, std::string *error);
bool read_tensor(const std::string &pb_path, Tensor *tensor, std::string *error);

}  // namespace convgrad::test::onnx_pb
