#include "ops.h"

namespace convgrad::cli {

const std::vector<int64_t> &OpArgs::int_list(const std::string &name) const {
    static const std::vector<int64_t> empty;
    auto it = ints.find(name);
    return it == ints.end() ? empty : it->second;
}

std::string OpArgs::string_or(const std::string &name, const std::string &fallback) const {
    auto it = strings.find(name);
    return it == strings.end() ? fallback : it->second;
}

Result<int64_t> OpArgs::scalar(const std::string &name, int64_t fallback) const {
    auto it = ints.find(name);
    if (it == ints.end()) return fallback;
    if (it->second.size() != 1) return Status::invalid("--" + name + ": expected one integer");
    return it->second[0];
}

Shape OpArgs::shape(const std::string &tensor) const { return tensors.at(tensor).shape; }

const std::vector<OpSpec> &op_table() {
    static const std::vector<OpSpec> table = [] {
        std::vector<OpSpec> t;
        add_tf_ops(t);
        add_onednn_ops(t);
        add_onnx_ops(t);
        return t;
    }();
    return table;
}

const OpSpec *find_op(const std::string &name) {
    for (const OpSpec &op : op_table()) {
        if (op.name == name) return &op;
    }
    return nullptr;
}

}  // namespace convgrad::cli
