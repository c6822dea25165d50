#include "onnx_protobuf.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace convgrad::test::onnx_pb {
namespace {

// A cursor over one protobuf message.
struct Reader {
    const uint8_t *p, *end;

    bool done() const { return p >= end; }
    bool varint(uint64_t *v) {
        *v = 0;
        for (int shift = 0; shift < 64 && p < end; shift += 7) {
            const uint8_t b = *p++;
            *v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return true;
        }
        return false;
    }
    // Reads a field key; `bytes` is set for length-delimited fields, `value` for varints.
    bool field(uint32_t *number, uint32_t *wire, Reader *bytes, uint64_t *value) {
        uint64_t key;
        if (!varint(&key)) return false;
        *number = static_cast<uint32_t>(key >> 3), *wire = static_cast<uint32_t>(key & 7);
        switch (*wire) {
        case 0: return varint(value);
        case 1: if (end - p < 8) return false; std::memcpy(value, p, 8); p += 8; return true;
        case 5: if (end - p < 4) return false; *value = 0; std::memcpy(value, p, 4); p += 4; return true;
        case 2: {
            uint64_t len;
            if (!varint(&len) || len > static_cast<uint64_t>(end - p)) return false;
            *bytes = Reader{p, p + len};
            p += len;
            return true;
        }
        default: return false;
        }
    }
    std::string str() const { return std::string(reinterpret_cast<const char *>(p), end - p); }
};

bool slurp(const std::string &path, std::string *data, std::string *error) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        *error = "cannot open " + path;
        return false;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    *data = ss.str();
    return true;
}

Reader reader(const std::string &data) {
    const auto *b = reinterpret_cast<const uint8_t *>(data.data());
    return Reader{b, b + data.size()};
}

// Repeated int64: packed (wire 2) or one varint per field (wire 0).
bool append_ints(uint32_t wire, Reader &bytes, uint64_t value, std::vector<int64_t> *out) {
    if (wire == 0) {
        out->push_back(static_cast<int64_t>(value));
        return true;
    }
    while (!bytes.done()) {
        uint64_t v;
        if (!bytes.varint(&v)) return false;
        out->push_back(static_cast<int64_t>(v));
    }
    return true;
}

bool parse_attribute(Reader r, Node *node) {
    std::string name, s;
    std::vector<int64_t> ints;
    bool has_int = false, has_string = false;
    uint32_t number, wire;
    Reader bytes{nullptr, nullptr};
    uint64_t value = 0;
    while (!r.done()) {
        if (!r.field(&number, &wire, &bytes, &value)) return false;
        if (number == 1 && wire == 2) name = bytes.str();
        else if (number == 3 && wire == 0) ints.push_back(static_cast<int64_t>(value)), has_int = true;
        else if (number == 4 && wire == 2) s = bytes.str(), has_string = true;
        else if (number == 8) has_int = append_ints(wire, bytes, value, &ints) || has_int;
    }
    if (has_string) node->strings[name] = s;
    else if (has_int) node->ints[name] = ints;
    return true;
}

}  // namespace

bool read_first_node(const std::string &model_path, Node *node, std::string *error) {
    std::string data;
    if (!slurp(model_path, &data, error)) return false;
    Reader model = reader(data), bytes{nullptr, nullptr};
    uint32_t number, wire;
    uint64_t value;
    while (!model.done()) {
        if (!model.field(&number, &wire, &bytes, &value)) break;
        if (number != 7 || wire != 2) continue;  // ModelProto.graph
        Reader graph = bytes;
        while (!graph.done()) {
            if (!graph.field(&number, &wire, &bytes, &value)) break;
            if (number != 1 || wire != 2) continue;  // GraphProto.node
            Reader n = bytes;
            while (!n.done()) {
                if (!n.field(&number, &wire, &bytes, &value)) break;
                if (number == 4 && wire == 2) node->op_type = bytes.str();
                if (number == 5 && wire == 2 && !parse_attribute(bytes, node)) break;
            }
            return true;
        }
    }
    *error = "no graph node in " + model_path;
    return false;
}

bool read_tensor(const std::string &pb_path, Tensor *tensor, std::string *error) {
    std::string data;
    if (!slurp(pb_path, &data, error)) return false;
    Reader r = reader(data), bytes{nullptr, nullptr};
    uint32_t number, wire;
    uint64_t value;
    std::string raw;
    while (!r.done()) {
        if (!r.field(&number, &wire, &bytes, &value)) {
            *error = "malformed TensorProto " + pb_path;
            return false;
        }
        if (number == 1) append_ints(wire, bytes, value, &tensor->dims);
        else if (number == 2 && wire == 0) tensor->data_type = static_cast<int32_t>(value);
        else if (number == 9 && wire == 2) raw = bytes.str();
        else if (number == 4 && wire == 2) raw.append(bytes.str());  // packed float_data
        else if (number == 4 && wire == 5) raw.append(reinterpret_cast<const char *>(&value), 4);
    }
    if (tensor->data_type != 1) {
        *error = pb_path + ": only FLOAT tensors are read here";
        return false;
    }
    tensor->values.resize(raw.size() / 4);
    std::memcpy(tensor->values.data(), raw.data(), tensor->values.size() * 4);
    int64_t count = 1;
    for (int64_t d : tensor->dims) count *= d;
    if (count != static_cast<int64_t>(tensor->values.size())) {
        *error = pb_path + ": " + std::to_string(tensor->values.size()) + " values for " + std::to_string(count) + " elements";
        return false;
    }
    return true;
}

}  // namespace convgrad::test::onnx_pb
