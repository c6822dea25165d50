// `convgrad run` end to end: the real binary on .npy files, results against the float64
// reference; every kind of bad input gives exit 2 or 3, a message naming the argument, no
// output file, and never a crash signal (also under random argument mutation).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "npy.h"
#include "reference_nd.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

struct CliResult {
    int exit_code = -1;
    int signal = 0;
    std::string stderr_text, stdout_text;
};

// A valid Conv2DBackpropInput call with its reference answer.
struct InputCase {
    TfConv2D conv;
    std::vector<double> w, dy;
    std::vector<std::string> args;
};

class CliTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/convgrad_cli_XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
    }
    void TearDown() override { std::system(("rm -rf '" + dir + "'").c_str()); }

    std::string path(const std::string &name) const { return dir + "/" + name; }

    std::string write_f32(const std::string &name, const Shape &shape, const std::vector<double> &v) {
        std::vector<float> f(v.begin(), v.end());
        EXPECT_TRUE(npy::write(path(name), DType::kFloat32, shape, f.data()).is_ok());
        return path(name);
    }

    // env: VAR=value settings for this run alone ("" for none).
    CliResult run(const std::vector<std::string> &args, const std::string &env = "") const {
        std::string cmd = (env.empty() ? "" : "env '" + env + "' ") + "'" CONVGRAD_CLI "'";
        for (const auto &a : args) cmd += " '" + a + "'";
        const std::string err = path("stderr.txt"), out = path("stdout.txt");
        cmd += " >'" + out + "' 2>'" + err + "'";
        const int status = std::system(cmd.c_str());
        CliResult r;
        // system() runs sh -c: a child killed by a signal shows as exit 128+N from the shell.
        if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
        if (r.exit_code > 128) r.signal = r.exit_code - 128;
        auto slurp = [](const std::string &file) {
            std::ifstream f(file);
            std::stringstream ss;
            ss << f.rdbuf();
            return ss.str();
        };
        r.stderr_text = slurp(err);
        r.stdout_text = slurp(out);
        return r;
    }

    InputCase conv2d_input_case(bool nchw, Rng &rng) {
        InputCase k;
        TfConv2D &c = k.conv;
        c.data_format = nchw ? "NCHW" : "NHWC";
        c.input = nchw ? Shape{2, 6, 9, 8} : Shape{2, 9, 8, 6};
        c.filter = {3, 2, 3, 4};  // 2 groups
        c.strides = nchw ? std::vector<int64_t>{1, 1, 2, 1} : std::vector<int64_t>{1, 2, 1, 1};
        c.dilations = nchw ? std::vector<int64_t>{1, 1, 1, 2} : std::vector<int64_t>{1, 1, 2, 1};
        c.padding = "EXPLICIT";
        c.explicit_paddings = nchw ? std::vector<int64_t>{0, 0, 0, 0, 1, 2, 0, 1} : std::vector<int64_t>{0, 0, 1, 2, 0, 1, 0, 0};
        infer_out_backprop(c);
        k.w = random_values(num_elements(c.filter), rng);
        k.dy = random_values(num_elements(c.out_backprop), rng);
        auto list = [](const std::vector<int64_t> &v) {
            std::string s;
            for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(v[i]);
            return s;
        };
        k.args = {"run", "Conv2DBackpropInput", "--input_sizes", list(c.input), "--filter",
                  write_f32("filter.npy", c.filter, k.w), "--out_backprop", write_f32("dy.npy", c.out_backprop, k.dy),
                  "--strides", list(c.strides), "--dilations", list(c.dilations), "--padding", "EXPLICIT",
                  "--explicit_paddings", list(c.explicit_paddings), "--data_format", c.data_format};
        return k;
    }

    bool exists(const std::string &p) const { return access(p.c_str(), F_OK) == 0; }

    std::string dir;
};

std::vector<double> read_result(const std::string &p, const Shape &shape) {
    auto a = npy::read(p, "result");
    EXPECT_TRUE(a.is_ok()) << a.status.message();
    EXPECT_EQ(a.value.descr, "<f4");
    EXPECT_EQ(a.value.shape, shape);
    std::vector<double> v(num_elements(shape));
    for (size_t i = 0; i < v.size(); i++) v[i] = reinterpret_cast<const float *>(a.value.bytes.data())[i];
    return v;
}

TEST_F(CliTest, Conv2DBackpropInputBothLayouts) {
    Rng rng(21);
    for (bool nchw : {false, true}) {
        InputCase k = conv2d_input_case(nchw, rng);
        k.args.insert(k.args.end(), {"--output", path("dx.npy")});
        CliResult r = run(k.args);
        ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
        EXPECT_LE(relative_error(read_result(path("dx.npy"), k.conv.input), backprop_input(k.conv, k.w, k.dy)), 1e-5);
    }
}

// Every device with kernels and a device here: the CPU, and OpenCL on PoCL in CI.
std::vector<std::string> run_devices() {
    std::vector<std::string> out = {"cpu"};
    for (const DeviceInfo &d : devices()) {
        if (d.api != Device::kCpu && gpu_kernels_built(d.api) && d.index == 0) out.push_back(device_name(d.api));
    }
    return out;
}

TEST_F(CliTest, AllFourOpsWithDefaults) {
    Rng rng(22);
    for (const std::string &device : run_devices())
    for (bool depthwise : {false, true}) {
        SCOPED_TRACE("--device " + device);
        TfConv2D c;
        c.depthwise = depthwise;
        c.input = {2, 7, 6, 4};
        c.filter = depthwise ? Shape{3, 3, 4, 2} : Shape{3, 3, 4, 5};
        c.padding = "SAME";
        infer_out_backprop(c);
        const auto x = random_values(num_elements(c.input), rng), w = random_values(num_elements(c.filter), rng),
                   dy = random_values(num_elements(c.out_backprop), rng);
        const std::string prefix = depthwise ? "DepthwiseConv2dNative" : "Conv2D";
        CliResult r = run({"run", prefix + "BackpropInput", "--input_sizes", "7,6", "--filter",
                           write_f32("w.npy", c.filter, w), "--out_backprop", write_f32("dy.npy", c.out_backprop, dy),
                           "--padding", "SAME", "--device", device, "--output", path("dx.npy")});
        ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
        EXPECT_LE(relative_error(read_result(path("dx.npy"), c.input), backprop_input(c, w, dy)), 1e-5);
        const std::string fs = std::to_string(c.filter[0]) + ",3," + std::to_string(c.filter[2]) + "," +
                               std::to_string(c.filter[3]);
        r = run({"run", prefix + "BackpropFilter", "--input", write_f32("x.npy", c.input, x), "--filter_sizes", fs,
                 "--out_backprop", path("dy.npy"), "--padding", "SAME", "--device", device, "--output", path("dw.npy")});
        ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
        EXPECT_LE(relative_error(read_result(path("dw.npy"), c.filter), backprop_filter(c, x, dy)), 1e-5);
    }
}

// Each bad invocation: the expected exit code, a message containing `needle`, no output.
struct BadCall {
    std::string what;
    std::vector<std::string> replace;  // pairs: argument, new value ("" value removes the argument)
    int exit_code;
    std::string needle;
};

TEST_F(CliTest, BadInputIsRejectedCleanly) {
    Rng rng(23);
    InputCase k = conv2d_input_case(false, rng);
    std::vector<double> d(num_elements(k.conv.filter), 0.5);
    EXPECT_TRUE(npy::write(path("f64.npy"), DType::kFloat64, k.conv.filter, d.data()).is_ok());
    std::vector<int32_t> i32(num_elements(k.conv.filter), 1);
    EXPECT_TRUE(npy::write(path("i32.npy"), DType::kInt32, k.conv.filter, i32.data()).is_ok());
    std::ofstream(path("garbage.npy")) << "this is not numpy";
    {
        std::ifstream src(path("dy.npy"), std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(src)), {});
        std::ofstream(path("truncated.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 7);
    }
    const std::vector<BadCall> bad = {
        {"unknown argument", {"--bogus", "1"}, 2, "--bogus"},
        {"malformed ints", {"--strides", "1,a,1,1"}, 2, "--strides"},
        {"trailing comma", {"--strides", "1,2,1,"}, 2, "--strides"},
        {"wrong strides count", {"--strides", "1,2,1"}, 2, "strides: must have 4 entries"},
        {"bad padding", {"--padding", "FULL"}, 2, "padding"},
        {"bad data_format", {"--data_format", "NWHC"}, 2, "data_format"},
        {"missing padding", {"--padding", ""}, 2, "--padding: required"},
        {"missing input_sizes", {"--input_sizes", ""}, 2, "--input_sizes: required"},
        {"missing tensor", {"--filter", ""}, 2, "--filter: required"},
        {"missing file", {"--filter", path("nope.npy")}, 2, "--filter"},
        {"not npy", {"--filter", path("garbage.npy")}, 2, "not a .npy file"},
        {"truncated npy", {"--out_backprop", path("truncated.npy")}, 2, "less data"},
        {"inconsistent shapes", {"--input_sizes", "2,10,8,6"}, 2, "out_backprop"},
        {"mixed dtypes", {"--filter", path("f64.npy")}, 2, "dtype"},
        {"device", {"--device", "tpu"}, 2, "--device"},
        {"backend", {"--backend", "fast"}, 2, "--backend"},
        {"cuda without a device", {"--device", "cuda"}, 3, "device cuda"},
        {"jit on a GPU", {"--backend", "jit", "--device", "opencl"}, 3, "backend: jit compiles CPU kernels only"},
        {"huge stride", {"--strides", "1,99999999999,1,1"}, 2, "out_backprop"},
    };
    for (const BadCall &b : bad) {
        SCOPED_TRACE(b.what);
        std::vector<std::string> args = k.args;
        for (size_t i = 0; i + 1 < b.replace.size(); i += 2) {
            auto it = std::find(args.begin(), args.end(), b.replace[i]);
            if (it == args.end()) {
                args.insert(args.end(), {b.replace[i], b.replace[i + 1]});
            } else if (b.replace[i + 1].empty()) {
                args.erase(it, it + 2);
            } else {
                *(it + 1) = b.replace[i + 1];
            }
        }
        args.insert(args.end(), {"--output", path("out.npy")});
        CliResult r = run(args);
        EXPECT_EQ(r.signal, 0);
        EXPECT_EQ(r.exit_code, b.exit_code) << r.stderr_text;
        EXPECT_NE(r.stderr_text.find(b.needle), std::string::npos) << r.stderr_text;
        EXPECT_EQ(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 1) << "one line: " << r.stderr_text;
        EXPECT_FALSE(exists(path("out.npy")));
    }
    // float64 tensors: computed in float64, written as float64.
    std::vector<double> dy64(k.dy.begin(), k.dy.end()), w64(k.w.begin(), k.w.end());
    EXPECT_TRUE(npy::write(path("dy64.npy"), DType::kFloat64, k.conv.out_backprop, dy64.data()).is_ok());
    EXPECT_TRUE(npy::write(path("w64.npy"), DType::kFloat64, k.conv.filter, w64.data()).is_ok());
    std::vector<std::string> args = k.args;
    *(std::find(args.begin(), args.end(), "--filter") + 1) = path("w64.npy");
    *(std::find(args.begin(), args.end(), "--out_backprop") + 1) = path("dy64.npy");
    args.insert(args.end(), {"--output", path("out.npy")});
    CliResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    auto out = npy::read(path("out.npy"), "out");
    ASSERT_TRUE(out.is_ok());
    EXPECT_EQ(out.value.descr, "<f8");
    const auto *v = reinterpret_cast<const double *>(out.value.bytes.data());
    EXPECT_LE(relative_error(std::vector<double>(v, v + num_elements(k.conv.input)), backprop_input(k.conv, k.w, k.dy)),
              1e-12);
}

TEST_F(CliTest, CommandLevelErrors) {
    EXPECT_EQ(run({}).exit_code, 2);
    CliResult r = run({"frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("unknown command 'frobnicate'"), std::string::npos);
    r = run({"run"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("missing <Op>"), std::string::npos);
    r = run({"run", "Conv2DBackpropWhatever", "--output", path("o.npy")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("unknown op 'Conv2DBackpropWhatever'"), std::string::npos);
    EXPECT_FALSE(exists(path("o.npy")));
    EXPECT_EQ(run({"run", "Conv2DBackpropInput", "--help"}).exit_code, 0);
    r = run({"info"});
    EXPECT_EQ(r.exit_code, 0);
    const std::string vendor = host_cpu_vendor().empty() ? "(not x86)" : host_cpu_vendor();
    EXPECT_NE(r.stdout_text.find("host CPU vendor: " + vendor + "\n"), std::string::npos) << r.stdout_text;
    EXPECT_NE(r.stdout_text.find("host CPU family: " + std::to_string(host_cpu_family()) + "\n"), std::string::npos)
        << r.stdout_text;
    EXPECT_EQ(run({"info", "extra"}).exit_code, 2);
}

// CONVGRAD_MAX_CPU_ISA caps the x86 path (the ISA-path tests run each path natively with
// it); a name it does not know fails every call with a message, instead of being ignored.
TEST_F(CliTest, MaxCpuIsa) {
    CliResult r = run({"info"}, "CONVGRAD_MAX_CPU_ISA=avx9");
    EXPECT_NE(r.stdout_text.find("x86 multitarget path: error: CONVGRAD_MAX_CPU_ISA=avx9: expected avx512_skylake, "
                                 "avx2 or sse41"),
              std::string::npos)
        << r.stdout_text << r.stderr_text;
#if defined(__x86_64__)
    r = run({"info"}, "CONVGRAD_MAX_CPU_ISA=sse41");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.stdout_text.find("x86 multitarget path: sse41 (expected from CPUID: sse41, at most "
                                 "CONVGRAD_MAX_CPU_ISA=sse41)"),
              std::string::npos)
        << r.stdout_text << r.stderr_text;
#endif
}

// The oneDNN Graph, ONNX and TF 3-D ops through the CLI, against the N-D reference.
TEST_F(CliTest, OneDnnGraphOnnxAndConv3DOps) {
    Rng rng(25);
    auto ints = [](const std::vector<int64_t> &v) {
        std::string s;
        for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(v[i]);
        return s;
    };
    // 1-D, NCX/OIX, 2 groups, dilation 2, same_lower: pads (2, 1) for input 7, kernel 3 (Ke 5), stride 2.
    NdConv c1;
    c1.rank = 1, c1.batch = 2, c1.groups = 2, c1.cin = 4, c1.cout = 6;
    c1.in = {7}, c1.out = {4}, c1.kernel = {3}, c1.stride = {2}, c1.dilation = {2}, c1.pad_begin = {2};
    auto w1 = random_values(num_elements(c1.w_shape()), rng), dy1 = random_values(num_elements(c1.dy_shape()), rng);
    CliResult r = run({"run", "ConvolutionBackpropData", "--output_delta", write_f32("dy1.npy", c1.dy_shape(), dy1),
                       "--filter", write_f32("w1.npy", c1.w_shape(), w1), "--output_shape", "7", "--strides", "2",
                       "--dilations", "2", "--auto_pad", "same_lower", "--groups", "2", "--data_format", "NCX",
                       "--filter_format", "OIX", "--output", path("dx1.npy")});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    EXPECT_LE(relative_error(read_result(path("dx1.npy"), c1.x_shape()), nd_backprop_data(c1, w1, dy1)), 1e-5);

    // 3-D, NXC/XIO, explicit pads, spatial filters_shape.
    NdConv c3;
    c3.rank = 3, c3.batch = 1, c3.groups = 1, c3.cin = 3, c3.cout = 2;
    c3.in = {4, 5, 3}, c3.kernel = {2, 3, 1}, c3.stride = {1, 2, 1}, c3.dilation = {1, 1, 1}, c3.pad_begin = {1, 1, 0};
    c3.out = {4, 3, 3};  // (4+1+0-2)/1+1, (5+1+1-3)/2+1, (3-1)/1+1 with pads_end (0, 1, 0)
    auto x3 = random_values(num_elements(c3.x_shape()), rng), dy3 = random_values(num_elements(c3.dy_shape()), rng);
    const auto nxc = ncx_to_nxc(3);
    r = run({"run", "ConvolutionBackpropFilters", "--input",
             write_f32("x3.npy", permute_shape(c3.x_shape(), nxc), permute(x3, c3.x_shape(), nxc)), "--output_delta",
             write_f32("dy3.npy", permute_shape(c3.dy_shape(), nxc), permute(dy3, c3.dy_shape(), nxc)),
             "--filters_shape", ints(c3.kernel), "--strides", "1,2,1", "--pads_begin", "1,1,0", "--pads_end", "0,1,0",
             "--output", path("dw3.npy")});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    const auto xio = oix_to_xio(3);
    EXPECT_LE(relative_error(read_result(path("dw3.npy"), permute_shape(c3.w_shape(), xio)),
                             permute(nd_backprop_filter(c3, x3, dy3), c3.w_shape(), xio)),
              1e-5);

    // The same 3-D problem's data gradient as TF Conv3DBackpropInputV2 is not expressible
    // (TF has no explicit pads in 3-D): use SAME on a 2x2x2 stride instead.
    NdConv t;
    t.rank = 3, t.batch = 1, t.groups = 1, t.cin = 2, t.cout = 3;
    t.in = {4, 4, 4}, t.out = {2, 2, 2}, t.kernel = {3, 3, 3}, t.stride = {2, 2, 2}, t.dilation = {1, 1, 1};
    t.pad_begin = {0, 0, 0};  // SAME: total = (2-1)*2 + 3 - 4 = 1, before = 0
    auto wt = random_values(num_elements(t.w_shape()), rng), dyt = random_values(num_elements(t.dy_shape()), rng);
    r = run({"run", "Conv3DBackpropInputV2", "--input_sizes", "1,2,4,4,4", "--filter",
             write_f32("wt.npy", permute_shape(t.w_shape(), xio), permute(wt, t.w_shape(), xio)), "--out_backprop",
             write_f32("dyt.npy", t.dy_shape(), dyt), "--strides", "1,1,2,2,2", "--padding", "SAME", "--data_format",
             "NCDHW", "--output", path("dxt.npy")});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    EXPECT_LE(relative_error(read_result(path("dxt.npy"), t.x_shape()), nd_backprop_data(t, wt, dyt)), 1e-5);

    // ONNX ConvTranspose: X is dy, W the forward weights [C_X, C_out/group, k].
    NdConv o;
    o.rank = 2, o.batch = 1, o.groups = 1, o.cin = 2, o.cout = 3;
    o.out = {3, 3}, o.kernel = {3, 3}, o.stride = {3, 2}, o.dilation = {1, 1}, o.pad_begin = {1, 2};
    o.in = {3 * 2 + 3 - 2 + 1, 2 * 2 + 3 - 4 + 1};  // s*(in-1) + Ke - pads + output_padding
    auto wo = random_values(num_elements(o.w_shape()), rng), xo = random_values(num_elements(o.dy_shape()), rng);
    r = run({"run", "ConvTranspose", "--X", write_f32("xo.npy", o.dy_shape(), xo), "--W",
             write_f32("wo.npy", o.w_shape(), wo), "--strides", "3,2", "--pads", "1,2,1,2", "--output_padding", "1,1",
             "--output", path("yo.npy")});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    EXPECT_LE(relative_error(read_result(path("yo.npy"), o.x_shape()), nd_backprop_data(o, wo, xo)), 1e-5);

    // Op-specific argument rules.
    r = run({"run", "ConvolutionBackpropData", "--output_delta", path("dy1.npy"), "--filter", path("w1.npy"),
             "--groups", "1,2", "--output", path("bad.npy")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("--groups: expected one integer"), std::string::npos) << r.stderr_text;
    r = run({"run", "Conv3DBackpropInputV2", "--input_sizes", "1,2,4,4,4", "--filter", path("wt.npy"),
             "--out_backprop", path("dyt.npy"), "--padding", "SAME", "--explicit_paddings", "0,0",
             "--output", path("bad.npy")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("explicit_paddings"), std::string::npos) << r.stderr_text;
    r = run({"run", "ConvTranspose", "--X", path("xo.npy"), "--W", path("wo.npy"), "--auto_pad", "SAME",
             "--output", path("bad.npy")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("ConvTranspose: auto_pad"), std::string::npos) << r.stderr_text;
    EXPECT_FALSE(exists(path("bad.npy")));
}

// Every dtype through the CLI: the result has the tensors' dtype (bfloat16: uint16 bits with
// --dtype bfloat16) and matches the reference within the dtype's precision.
TEST_F(CliTest, EveryDtypeEndToEnd) {
    Rng rng(26);
    TfConv2D c;
    c.input = {2, 6, 5, 4};
    c.filter = {3, 3, 4, 3};
    c.padding = "SAME";
    c.strides = {1, 2, 1, 1};
    infer_out_backprop(c);
    struct Case {
        DType dtype;
        double tolerance;  // relative (2-norm)
    };
    for (const Case &k : {Case{DType::kFloat16, 2e-3}, Case{DType::kBFloat16, 1e-2}, Case{DType::kFloat64, 1e-12},
                          Case{DType::kInt32, 0}}) {
        SCOPED_TRACE(dtype_name(k.dtype));
        auto values = [&](int64_t n) {
            std::vector<double> v = random_values(n, rng);
            for (double &x : v) x = k.dtype == DType::kInt32 ? std::round(x * 50) : round_to(k.dtype, x);
            return v;
        };
        const auto w = values(num_elements(c.filter)), dy = values(num_elements(c.out_backprop));
        auto write = [&](const std::string &name, const Shape &shape, const std::vector<double> &v) {
            std::vector<unsigned char> bytes(v.size() * dtype_size(k.dtype));
            for (size_t i = 0; i < v.size(); i++) store(k.dtype, &bytes[i * dtype_size(k.dtype)], v[i]);
            EXPECT_TRUE(npy::write(path(name), k.dtype, shape, bytes.data()).is_ok());
            return path(name);
        };
        std::vector<std::string> args = {"run", "Conv2DBackpropInput", "--input_sizes", "2,6,5,4", "--filter",
                                         write("w.npy", c.filter, w), "--out_backprop",
                                         write("dy.npy", c.out_backprop, dy), "--strides", "1,2,1,1", "--padding",
                                         "SAME", "--output", path("dx.npy")};
        if (k.dtype == DType::kBFloat16) {
            CliResult r = run(args);  // uint16 without --dtype: rejected
            EXPECT_EQ(r.exit_code, 2);
            EXPECT_NE(r.stderr_text.find("needs --dtype bfloat16"), std::string::npos) << r.stderr_text;
            args.insert(args.end(), {"--dtype", "bfloat16"});
        }
        CliResult r = run(args);
        ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
        auto out = npy::read(path("dx.npy"), "dx");
        ASSERT_TRUE(out.is_ok()) << out.status.message();
        EXPECT_EQ(out.value.descr, npy::descr_of(k.dtype));
        std::vector<double> got(num_elements(c.input));
        for (size_t i = 0; i < got.size(); i++) got[i] = load(k.dtype, &out.value.bytes[i * dtype_size(k.dtype)]);
        const auto ref = backprop_input(c, w, dy);
        if (k.dtype == DType::kInt32) EXPECT_EQ(got, ref);
        else EXPECT_LE(relative_error(got, ref), k.tolerance);
    }
    // --dtype that contradicts the tensors, or is not a dtype.
    CliResult r = run({"run", "Conv2DBackpropInput", "--input_sizes", "2,6,5,4", "--filter", path("w.npy"),
                       "--out_backprop", path("dy.npy"), "--padding", "SAME", "--strides", "1,2,1,1", "--dtype",
                       "float32", "--output", path("bad.npy")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("--dtype: float32 needs tensors of dtype '<f4'"), std::string::npos) << r.stderr_text;
    r = run({"run", "Conv2DBackpropInput", "--input_sizes", "2,6,5,4", "--filter", path("w.npy"), "--out_backprop",
             path("dy.npy"), "--padding", "SAME", "--strides", "1,2,1,1", "--dtype", "float8", "--output", path("bad.npy")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("--dtype: must be"), std::string::npos) << r.stderr_text;
    EXPECT_FALSE(exists(path("bad.npy")));
}

// convgrad bench on one small problem: a table, JSON with every field, clean errors.
// --backend jit compiles a kernel for the call's exact problem into the disk cache; the next
// run loads it (same result); auto (which takes it when cached) agrees.
TEST_F(CliTest, JitBackend) {
    Rng rng(24);
    InputCase k = conv2d_input_case(false, rng);
    setenv("CONVGRAD_CACHE_DIR", path("cache").c_str(), 1);
    std::vector<double> results[3];
    const char *backends[3] = {"jit", "jit", "auto"};
    for (int i = 0; i < 3; i++) {
        std::vector<std::string> args = k.args;
        args.insert(args.end(), {"--backend", backends[i], "--output", path("dx.npy")});
        CliResult r = run(args);
        ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
        results[i] = read_result(path("dx.npy"), k.conv.input);
        EXPECT_LE(relative_error(results[i], backprop_input(k.conv, k.w, k.dy)), 1e-5);
    }
    unsetenv("CONVGRAD_CACHE_DIR");
    EXPECT_EQ(results[1], results[0]);
    EXPECT_EQ(results[2], results[0]);
    int entries = 0;
    for (const auto &e : std::filesystem::directory_iterator(path("cache"))) entries += e.path().extension() == ".so";
    EXPECT_EQ(entries, 1);
}

// The autotuner on one small problem: every candidate measured and logged, the database
// written with its command; a rerun resumes from the log; a spent budget stops cleanly.
TEST_F(CliTest, TuneSmoke) {
    // A depthwise NCHW layer (ncg_fp: three candidates, each compiled in about a second; a
    // dense layer's eleven took 220 s of CI).
    std::ofstream(path("one.conv")) << "g20mb4ic20ih8iw8oc20oh8ow8kh3kw3ph1pw1n\"small\"\n";
    setenv("CONVGRAD_CACHE_DIR", path("cache").c_str(), 1);
    const std::vector<std::string> args = {"tune", "--batch", path("one.conv"), "--layout", "nchw", "--dir", "BWD_W", "--db", path("db.json"),
                                           "--min-time", "0", "--budget", "300"};
    CliResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    EXPECT_NE(r.stdout_text.find("| bwd_weights_f32_ncg_fp | 1 |"), std::string::npos) << r.stdout_text;
    std::ifstream db(path("db.json"));
    const std::string j((std::istreambuf_iterator<char>(db)), {});
    EXPECT_NE(j.find("\"command\": \"convgrad tune --batch"), std::string::npos) << j;
    EXPECT_NE(j.find("\"complete\": true"), std::string::npos) << j;
    std::ifstream log(path("db.json.log.jsonl"));
    int lines = 0;
    for (std::string line; std::getline(log, line);) lines++;
    EXPECT_GE(lines, 4) << "defaults and the three candidates, one line each";
    r = run(args);  // resumes: everything is in the log
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("(" + std::to_string(lines) + " from the log)"), std::string::npos) << r.stderr_text;
    // Another ISA path's items survive a run on this one (only this path's are replaced).
    std::ofstream(path("db3.json")) << R"({"variants": {"bwd_weights_f32_ncg_fp": {"schedule": "riscv_v.block:8"}}})";
    r = run({"tune", "--batch", path("one.conv"), "--layout", "nchw", "--dir", "BWD_W", "--db", path("db3.json"), "--log",
             path("db.json.log.jsonl"), "--min-time", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    std::ifstream db3(path("db3.json"));
    const std::string j3((std::istreambuf_iterator<char>(db3)), {});
    EXPECT_NE(j3.find("\"schedule\": \"riscv_v.block:8"), std::string::npos) << j3;
    EXPECT_NE(j3.find("\"runs\""), std::string::npos) << j3;
    std::filesystem::remove(path("db.json.log.jsonl"));
    r = run({"tune", "--batch", path("one.conv"), "--layout", "nchw", "--dir", "BWD_W", "--db", path("db2.json"), "--budget", "0.001"});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("budget spent"), std::string::npos) << r.stderr_text;
    unsetenv("CONVGRAD_CACHE_DIR");
    r = run({"tune", "--batch", path("one.conv"), "--budget", "-1"});
    EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
    r = run({"tune", "--batch", path("one.conv"), "--layout", "nwhc"});
    EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("nwhc"), std::string::npos) << r.stderr_text;
}

TEST_F(CliTest, BenchSmoke) {
    // A grouped layer (no oneDNN Winograd) and a 3x3 one (oneDNN's Winograd on AVX-512).
    std::ofstream(path("tiny.conv")) << "# two small problems\ng2mb2ic8ih9iw9oc8oh9ow9kh3kw3ph1pw1n\"tiny\"\n"
                                        "mb2ic16ih8iw8oc16oh8ow8kh3kw3ph1pw1n\"tiny_3x3\"\n";
    const std::string out = path("bench.txt");
    const std::string cmd = std::string("'") + CONVGRAD_CLI + "' bench --batch '" + path("tiny.conv") +
                            "' --min-time 0 --json '" + path("bench.json") + "' > '" + out + "' 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream table(out);
    const std::string text((std::istreambuf_iterator<char>(table)), {});
    EXPECT_NE(text.find("| tiny | grouped | BWD_D |"), std::string::npos) << text;
    EXPECT_NE(text.find("| tiny | grouped | BWD_W |"), std::string::npos) << text;
    std::ifstream json(path("bench.json"));
    const std::string j((std::istreambuf_iterator<char>(json)), {});
    for (const char *field : {"\"convgrad_ms\"", "\"onednn_user_ms\"", "\"onednn_own_ms\"", "\"peak_gflops\"",
                              "\"ratio_best_onednn_over_convgrad\"", "\"geomean_vs_best_onednn\"", "\"onednn_winograd_ms\"",
                              "\"ratio_fastest_onednn_over_convgrad\"", "\"geomean_vs_fastest_onednn\""}) {
        EXPECT_NE(j.find(field), std::string::npos) << field;
    }
    // oneDNN 2.6 has Winograd for f32 on AVX-512 only: there the 3x3 layer has its times.
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        EXPECT_NE(j.find("\"onednn_winograd_impl\": \"jit_wino"), std::string::npos) << j;
        EXPECT_NE(text.find("| tiny_3x3 | dense | BWD_W |"), std::string::npos) << text;
    }
    // GPU runs time convgrad alone (tensors in device memory), with the same fields.
    if (run_devices().size() > 1) {
        const std::string gpu = run_devices()[1];
        CliResult g = run({"bench", "--batch", path("tiny.conv"), "--min-time", "0", "--device", gpu});
        EXPECT_EQ(g.exit_code, 0) << g.stderr_text;
        EXPECT_NE(g.stdout_text.find("convgrad on " + gpu), std::string::npos) << g.stdout_text;
        EXPECT_NE(g.stdout_text.find("| tiny | grouped | BWD_W |"), std::string::npos) << g.stdout_text;
    }
    CliResult r = run({"bench", "--batch", path("missing.conv")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("--batch: cannot open"), std::string::npos) << r.stderr_text;
    r = run({"bench", "--batch", path("tiny.conv"), "--dtype", "f8"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("--dtype"), std::string::npos) << r.stderr_text;
    std::ofstream(path("bad.conv")) << "ic4ih8oc4kh3zz1\n";
    r = run({"bench", "--batch", path("bad.conv")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.stderr_text.find("unknown field 'zz'"), std::string::npos) << r.stderr_text;
}

// Random mutations of a valid call: whatever happens, a clean exit code and no signal.
TEST_F(CliTest, RandomArgumentMutationsNeverCrash) {
    Rng rng(24);
    InputCase k = conv2d_input_case(false, rng);
    const std::vector<std::string> values = {"0", "-1", "1", "2", "3", "2147483648", "-9223372036854775808",
                                             "1,1", "1,1,1,1", "1,0,1,1", "1,2,2,1", "1,-3,1,1",
                                             "1,1,1,1,1,1,1,1", "0,0,1,1,99999,2,0,0", "", "SAME", "VALID",
                                             "EXPLICIT", "NCHW", "NHWC", "x"};
    const std::vector<std::string> names = {"--input_sizes", "--strides", "--dilations", "--padding",
                                            "--explicit_paddings", "--data_format"};
    int ok = 0;
    for (int i = 0; i < 60; i++) {
        std::vector<std::string> args = k.args;
        for (int m = 0; m < 2; m++) {
            const std::string &name = names[std::uniform_int_distribution<size_t>(0, names.size() - 1)(rng)];
            const std::string &value = values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
            auto it = std::find(args.begin(), args.end(), name);
            if (it == args.end()) args.insert(args.end(), {name, value});
            else *(it + 1) = value;
        }
        args.insert(args.end(), {"--output", path("o.npy")});
        CliResult r = run(args);
        SCOPED_TRACE(r.stderr_text);
        EXPECT_EQ(r.signal, 0);
        EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2 || r.exit_code == 3) << r.exit_code;
        EXPECT_EQ(exists(path("o.npy")), r.exit_code == 0);
        ok += r.exit_code == 0;
        std::remove(path("o.npy").c_str());
    }
    EXPECT_LT(ok, 60) << "no mutation was rejected: the mutations test nothing";
}

}  // namespace
}  // namespace convgrad::test
