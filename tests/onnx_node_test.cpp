// ONNX's own ConvTranspose node tests (Debian's libonnx-testdata) as ground truth: every
// test_convtranspose* model is read (attributes from model.onnx, tensors from the .pb files)
// and run through convgrad's ONNX frontend.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "convgrad/onnx.h"
#include "onnx_protobuf.h"
#include "test_util.h"

namespace convgrad::test {
namespace {

const char *kNodeTests = "/usr/share/libonnx-testdata/data/node";

std::vector<std::string> conv_transpose_tests() {
    std::vector<std::string> names;
    if (DIR *d = opendir(kNodeTests)) {
        while (dirent *e = readdir(d)) {
            const std::string n = e->d_name;
            if (n.rfind("test_convtranspose", 0) == 0) names.push_back(n);
        }
        closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
}

onnx::ConvTransposeAttrs attrs_of(const onnx_pb::Node &node) {
    onnx::ConvTransposeAttrs a;
    auto ints = [&](const char *name) {
        auto it = node.ints.find(name);
        return it == node.ints.end() ? std::vector<int64_t>{} : it->second;
    };
    a.dilations = ints("dilations");
    a.kernel_shape = ints("kernel_shape");
    a.output_padding = ints("output_padding");
    a.output_shape = ints("output_shape");
    a.pads = ints("pads");
    a.strides = ints("strides");
    if (!ints("group").empty()) a.group = ints("group")[0];
    if (node.strings.count("auto_pad")) a.auto_pad = node.strings.at("auto_pad");
    return a;
}

TEST(OnnxNodeTests, AllConvTransposeTestsPass) {
    const auto tests = conv_transpose_tests();
    // Debian 12's libonnx-testdata ships 10; fewer means the data is missing, not a pass.
    ASSERT_GE(tests.size(), 10u) << "libonnx-testdata not installed? (scripts/install-deps.sh installs it)";
    for (const std::string &name : tests) {
        SCOPED_TRACE(name);
        const std::string dir = std::string(kNodeTests) + "/" + name;
        onnx_pb::Node node;
        onnx_pb::Tensor x, w, y;
        std::string error;
        ASSERT_TRUE(onnx_pb::read_first_node(dir + "/model.onnx", &node, &error)) << error;
        ASSERT_EQ(node.op_type, "ConvTranspose");
        ASSERT_TRUE(onnx_pb::read_tensor(dir + "/test_data_set_0/input_0.pb", &x, &error)) << error;
        ASSERT_TRUE(onnx_pb::read_tensor(dir + "/test_data_set_0/input_1.pb", &w, &error)) << error;
        ASSERT_TRUE(onnx_pb::read_tensor(dir + "/test_data_set_0/output_0.pb", &y, &error)) << error;

        auto p = onnx::conv_transpose(attrs_of(node), x.dims, w.dims, DType::kFloat32);
        ASSERT_TRUE(p.is_ok()) << p.status.message();
        ASSERT_EQ(input_shape(p.value), y.dims) << "output shape";
        HostTensor out(y.dims, false);
        out.poison();
        Status s = backward_data(p.value, Tensor{x.values.data(), DType::kFloat32, x.dims, {}},
                                 Tensor{w.values.data(), DType::kFloat32, w.dims, {}}, out.tensor);
        ASSERT_TRUE(s.is_ok()) << s.message();
        EXPECT_LE(relative_error(out.values(), std::vector<double>(y.values.begin(), y.values.end())), 1e-6);
    }
}

}  // namespace
}  // namespace convgrad::test
