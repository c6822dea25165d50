// The text of the JIT's `fixed` generator param (FixedProblem, generator_common.h): `key:v,v,...`
// items separated by `/`. Kept free of Halide.h so tools that only read such text
// (bench/kernel_ab.cpp) share this parser with the generators.
#pragma once

#include <cstdint>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace convgrad::gen {

using FixedValues = std::map<std::string, std::vector<int64_t>>;

inline FixedValues parse_fixed_values(const std::string &text) {
    FixedValues values;
    std::stringstream items(text);
    std::string item;
    while (std::getline(items, item, '/')) {
        const size_t colon = item.find(':');
        if (colon == std::string::npos) throw std::invalid_argument("convgrad: fixed: '" + item + "' has no ':'");
        std::vector<int64_t> v;
        std::stringstream nums(item.substr(colon + 1));
        std::string n;
        while (std::getline(nums, n, ',')) v.push_back(std::stoll(n));
        values[item.substr(0, colon)] = v;
    }
    return values;
}

}  // namespace convgrad::gen
