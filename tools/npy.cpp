#include "npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace convgrad::npy {
namespace {

// The header is a Python dict literal; these pull single fields out of it.
bool field(const std::string &header, const std::string &key, std::string *value) {
    const size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) return false;
    size_t v = header.find(':', k);
    if (v == std::string::npos) return false;
    v = header.find_first_not_of(" ", v + 1);
    if (v == std::string::npos) return false;
    size_t end;
    if (header[v] == '\'') {
        end = header.find('\'', v + 1);
        if (end == std::string::npos) return false;
        *value = header.substr(v + 1, end - v - 1);
    } else if (header[v] == '(') {
        end = header.find(')', v);
        if (end == std::string::npos) return false;
        *value = header.substr(v + 1, end - v - 1);
    } else {
        end = header.find_first_of(",}", v);
        if (end == std::string::npos) return false;
        *value = header.substr(v, end - v);
    }
    return true;
}

bool parse_shape(const std::string &text, Shape *shape) {
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        const size_t b = item.find_first_not_of(" "), e = item.find_last_not_of(" L");
        if (b == std::string::npos) continue;  // trailing comma of a 1-tuple
        const std::string num = item.substr(b, e - b + 1);
        if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos || num.size() > 15) return false;
        shape->push_back(std::stoll(num));
    }
    return true;
}

}  // namespace

bool dtype_of(const std::string &descr, bool uint16_is_bfloat16, DType *out) {
    if (descr == "<f4") *out = DType::kFloat32;
    else if (descr == "<f8") *out = DType::kFloat64;
    else if (descr == "<f2") *out = DType::kFloat16;
    else if (descr == "<i4") *out = DType::kInt32;
    else if (descr == "<u2" && uint16_is_bfloat16) *out = DType::kBFloat16;
    else return false;
    return true;
}

std::string descr_of(DType dtype) {
    switch (dtype) {
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kFloat16: return "<f2";
    case DType::kInt32: return "<i4";
    case DType::kBFloat16: return "<u2";
    }
    return "";
}

Tensor Array::tensor(DType dtype) {
    Tensor t;
    t.data = bytes.data();
    t.dtype = dtype;
    t.shape = shape;
    if (fortran_order) {  // column-major: strides grow from the first dimension
        int64_t s = 1;
        for (int64_t d : shape) {
            t.strides.push_back(s);
            s *= d > 0 ? d : 1;
        }
    }
    return t;
}

Result<Array> read(const std::string &path, const std::string &arg) {
    auto bad = [&](const std::string &why) { return Status::invalid(arg + ": '" + path + "': " + why); };
    std::ifstream f(path, std::ios::binary);
    if (!f) return bad("cannot open file");
    char magic[8];
    if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) return bad("not a .npy file");
    const int major = static_cast<unsigned char>(magic[6]);
    if (major < 1 || major > 3) return bad("unsupported .npy version " + std::to_string(major));
    uint32_t header_len = 0;
    unsigned char len_bytes[4] = {0, 0, 0, 0};
    if (!f.read(reinterpret_cast<char *>(len_bytes), major == 1 ? 2 : 4)) return bad("truncated header");
    for (int i = 3; i >= 0; i--) header_len = header_len << 8 | len_bytes[i];
    if (header_len > (1u << 20)) return bad("header too large");
    std::string header(header_len, '\0');
    if (!f.read(header.data(), header_len)) return bad("truncated header");

    Array a;
    std::string fortran, shape;
    if (!field(header, "descr", &a.descr) || !field(header, "fortran_order", &fortran) ||
        !field(header, "shape", &shape) || !parse_shape(shape, &a.shape)) {
        return bad("malformed header");
    }
    a.fortran_order = fortran == "True";
    double elements = 1;
    for (int64_t d : a.shape) elements *= static_cast<double>(d);
    DType dt;
    const int size = dtype_of(a.descr, true, &dt) ? dtype_size(dt) : 0;
    if (size == 0) return bad("unsupported dtype '" + a.descr + "' (need little-endian f2, f4, f8, i4 or u2)");
    if (elements * size > 64.0 * (1ull << 30)) return bad("tensor too large");
    a.bytes.resize(static_cast<size_t>(num_elements(a.shape)) * size);
    if (!f.read(reinterpret_cast<char *>(a.bytes.data()), static_cast<std::streamsize>(a.bytes.size()))) {
        return bad("file holds less data than its shape " + shape_string(a.shape) + " needs");
    }
    return a;
}

Status write(const std::string &path, DType dtype, const Shape &shape, const void *data) {
    std::string dims;
    for (int64_t d : shape) dims += std::to_string(d) + ", ";
    if (shape.size() > 1) dims.erase(dims.size() - 2);
    else if (shape.size() == 1) dims.pop_back();
    std::string header = "{'descr': '" + descr_of(dtype) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
    const size_t unpadded = 10 + header.size() + 1;  // magic+version+len, header, newline
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) return Status::invalid("--output: cannot create '" + path + "'");
    const uint16_t len = static_cast<uint16_t>(header.size());
    const char prefix[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(len & 0xff),
                             static_cast<char>(len >> 8)};
    f.write(prefix, 10);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    f.write(static_cast<const char *>(data), num_elements(shape) * dtype_size(dtype));
    if (!f) return Status::internal("--output: failed writing '" + path + "'");
    return Status::ok();
}

}  // namespace convgrad::npy
