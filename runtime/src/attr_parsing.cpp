#include "attr_parsing.h"

#include <cctype>

namespace convgrad::attr {

Result<SpatialDims> per_axis(const char *name, const std::vector<int64_t> &values, int rank, int64_t fallback,
                             int64_t min) {
    SpatialDims out{fallback, fallback, fallback};
    if (values.empty()) return out;
    if (static_cast<int>(values.size()) != rank) {
        return Status::invalid(std::string(name) + ": must have " + std::to_string(rank) + " entries (one per " +
                               "spatial axis), got " + std::to_string(values.size()));
    }
    for (int a = 0; a < rank; a++) {
        if (values[a] < min) {
            return Status::invalid(std::string(name) + ": entries must be >= " + std::to_string(min) + ", got " +
                                   std::to_string(values[a]));
        }
        out[a] = values[a];
    }
    return out;
}

Result<SpatialDims> spatial_or_full(const char *name, const Shape &values, int rank,
                                    const std::vector<int> &spatial_dims, Shape *full) {
    SpatialDims out{1, 1, 1};
    full->clear();
    if (static_cast<int>(values.size()) == rank + 2) {
        *full = values;
        for (int a = 0; a < rank; a++) out[a] = values[spatial_dims[a]];
    } else if (static_cast<int>(values.size()) == rank) {
        for (int a = 0; a < rank; a++) out[a] = values[a];
    } else {
        return Status::invalid(std::string(name) + ": must have " + std::to_string(rank) + " (spatial) or " +
                               std::to_string(rank + 2) + " (full shape) entries, got " + std::to_string(values.size()));
    }
    for (int64_t v : values) {
        if (v < 0) return Status::invalid(std::string(name) + ": negative size in " + shape_string(values));
    }
    return out;
}

Status check_shape(const char *what, const Shape &s, int dims, const char *like) {
    if (static_cast<int>(s.size()) != dims) {
        return Status::invalid(std::string(what) + ": must be " + std::to_string(dims) + "-D" +
                               (like ? std::string(" like ") + like : std::string()) + ", got shape " + shape_string(s));
    }
    for (int64_t d : s) {
        if (d < 0) return Status::invalid(std::string(what) + ": negative dimension in " + shape_string(s));
    }
    return Status::ok();
}

Status named(const char *op, const Status &s) { return Status(s.code(), std::string(op) + ": " + s.message()); }

std::string lower(std::string s) {
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace convgrad::attr
