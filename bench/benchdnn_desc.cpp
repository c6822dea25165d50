#include "benchdnn_desc.h"

#include <cctype>
#include <fstream>
#include <map>

namespace convgrad::bench {

std::string BenchProblem::problem_class() const {
    if (rank == 3) return "3d";
    if (g > 1 && g == ic && g == oc) return "depthwise";
    if (g > 1) return "grouped";
    for (int a = 0; a < 3; a++) {
        if (d[a] > 0) return "dilated";
    }
    for (int a = 0; a < 3; a++) {
        if (s[a] > 1) return "strided";
    }
    return "dense";
}

double BenchProblem::flops() const {
    double f = 2.0 * mb * oc * (ic / g);
    for (int a = 0; a < 3; a++) f *= static_cast<double>(out[a] * k[a]);
    return f;
}

Result<BenchProblem> parse_descriptor(const std::string &line) {
    BenchProblem b;
    b.line = line;
    std::map<std::string, int64_t> v;
    size_t i = 0;
    while (i < line.size()) {
        if (line[i] == 'n' && i + 1 < line.size() && line[i + 1] == '"') {  // n"name"
            const size_t end = line.find('"', i + 2);
            if (end == std::string::npos) return Status::invalid("descriptor: unterminated name in '" + line + "'");
            b.name = line.substr(i + 2, end - i - 2);
            i = end + 1;
            continue;
        }
        size_t j = i;
        while (j < line.size() && std::isalpha(static_cast<unsigned char>(line[j]))) j++;
        size_t k = j;
        while (k < line.size() && std::isdigit(static_cast<unsigned char>(line[k]))) k++;
        if (j == i || k == j || k - j > 12) return Status::invalid("descriptor: cannot parse '" + line.substr(i) + "'");
        v[line.substr(i, j - i)] = std::stoll(line.substr(j, k - j));
        i = k;
    }
    static const char *known[] = {"g", "mb", "ic", "oc", "id", "ih", "iw", "od", "oh", "ow", "kd", "kh", "kw",
                                  "sd", "sh", "sw", "pd", "ph", "pw", "dd", "dh", "dw"};
    for (const auto &[key, value] : v) {
        bool ok = false;
        for (const char *kn : known) ok = ok || key == kn;
        if (!ok) return Status::invalid("descriptor: unknown field '" + key + "' in '" + line + "'");
        if (value < 0) return Status::invalid("descriptor: negative '" + key + "'");
    }
    if (!v.count("ic") || !v.count("oc")) return Status::invalid("descriptor: needs ic and oc: '" + line + "'");
    auto get = [&](const char *key, int64_t fallback) { return v.count(key) ? v[key] : fallback; };
    b.g = get("g", 1), b.mb = get("mb", 2), b.ic = get("ic", 1), b.oc = get("oc", 1);
    b.rank = (v.count("id") || v.count("kd") || v.count("od")) ? 3 : (v.count("ih") || v.count("kh")) ? 2 : 1;
    // benchdnn's defaults: square sizes (w from h, d from h), stride 1, no padding or dilation.
    const char *axes[3] = {"d", "h", "w"};
    for (int a = 3 - b.rank; a < 3; a++) {
        const std::string x = axes[a], h = "h";
        auto pick = [&](const std::string &prefix) {
            const int64_t fallback_h = get((prefix + h).c_str(), -1);
            return get((prefix + x).c_str(), fallback_h);
        };
        b.in[a] = pick("i");
        b.k[a] = pick("k");
        b.s[a] = std::max<int64_t>(1, pick("s") < 0 ? 1 : pick("s"));
        b.p[a] = std::max<int64_t>(0, pick("p"));
        b.d[a] = std::max<int64_t>(0, pick("d"));
        if (b.in[a] < 1 || b.k[a] < 1) return Status::invalid("descriptor: missing input or kernel size in '" + line + "'");
        const int64_t ke = (b.k[a] - 1) * (b.d[a] + 1) + 1;
        const int64_t computed = (b.in[a] + 2 * b.p[a] - ke) / b.s[a] + 1;
        b.out[a] = pick("o") < 0 ? computed : pick("o");
        if (b.out[a] < 1) return Status::invalid("descriptor: empty output in '" + line + "'");
    }
    if (b.g < 1 || b.ic % b.g || b.oc % b.g) return Status::invalid("descriptor: g must divide ic and oc in '" + line + "'");
    if (b.name.empty()) b.name = line;
    return b;
}

Result<std::vector<BenchProblem>> parse_batch(const std::string &path) {
    std::ifstream f(path);
    if (!f) return Status::invalid("--batch: cannot open '" + path + "'");
    std::vector<BenchProblem> out;
    std::string line;
    while (std::getline(f, line)) {
        const size_t hash = line.find('#');
        if (hash != std::string::npos) line.resize(hash);
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.erase(0, 1);
        if (line.empty()) continue;
        auto b = parse_descriptor(line);
        if (!b.is_ok()) return Status::invalid("--batch: " + b.status.message());
        out.push_back(b.value);
    }
    return out;
}

ConvProblem to_problem(const BenchProblem &b, bool nchw, DType dtype) {
    ConvProblem p;
    p.spatial_rank = b.rank;
    p.batch = b.mb, p.groups = b.g, p.in_channels = b.ic, p.out_channels = b.oc;
    p.activation_layout = nchw ? ActivationLayout::kNCX : ActivationLayout::kNXC;
    p.filter_layout = nchw ? FilterLayout::kOIX : FilterLayout::kXIO;
    p.dtype = dtype;
    for (int a = 0; a < b.rank; a++) {
        const int src = 3 - b.rank + a;
        const int64_t ke = (b.k[src] - 1) * (b.d[src] + 1) + 1;
        p.input_size[a] = b.in[src], p.output_size[a] = b.out[src], p.kernel_size[a] = b.k[src];
        p.strides[a] = b.s[src], p.dilations[a] = b.d[src] + 1, p.pads_begin[a] = b.p[src];
        p.pads_end[a] = (b.out[src] - 1) * b.s[src] + ke - b.in[src] - b.p[src];  // benchdnn's right padding
    }
    return p;
}

}  // namespace convgrad::bench
