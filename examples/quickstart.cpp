// Quick start: the gradients of a TensorFlow Conv2D layer (ResNet-50's 3x3, 56x56, 64->64,
// batch 8, NHWC) through convgrad's C++ API, on random data.
//
//   1. TF attributes -> ConvProblem (validated, padding resolved)
//   2. allocate results with input_shape() / filter_shape()
//   3. backward_data() / backward_weights()
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "convgrad/convgrad.h"
#include "convgrad/tf.h"

using namespace convgrad;

int main() {
    tf::ConvAttrs attrs;
    attrs.strides = {1, 1, 1, 1};
    attrs.padding = "SAME";
    attrs.data_format = "NHWC";
    const Shape x_shape{8, 56, 56, 64}, w_shape{3, 3, 64, 64}, dy_shape{8, 56, 56, 64};

    Result<ConvProblem> data = tf::conv2d_backprop_input(attrs, x_shape, w_shape, dy_shape, DType::kFloat32);
    Result<ConvProblem> filter = tf::conv2d_backprop_filter(attrs, x_shape, w_shape, dy_shape, DType::kFloat32);
    if (!data.is_ok() || !filter.is_ok()) {
        std::fprintf(stderr, "%s\n", (data.is_ok() ? filter.status : data.status).message().c_str());
        return 2;
    }

    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    auto random_tensor = [&](const Shape &shape) {
        std::vector<float> v(num_elements(shape));
        for (float &f : v) f = uniform(rng);
        return v;
    };
    std::vector<float> x = random_tensor(x_shape), w = random_tensor(w_shape), dy = random_tensor(dy_shape);
    std::vector<float> dx(num_elements(input_shape(data.value))), dw(num_elements(filter_shape(filter.value)));

    auto timed = [](const char *what, const ConvProblem &p, auto call) {
        const auto t0 = std::chrono::steady_clock::now();
        Status s = call();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!s) {
            std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
            return false;
        }
        std::printf("%-17s %8.2f ms  %6.1f GFLOP/s (first call: includes warm-up)\n", what, ms,
                    2 * multiply_adds(p) / ms * 1e-6);
        return true;
    };
    const Tensor tx{x.data(), DType::kFloat32, x_shape, {}}, tw{w.data(), DType::kFloat32, w_shape, {}},
        tdy{dy.data(), DType::kFloat32, dy_shape, {}};
    const Tensor tdx{dx.data(), DType::kFloat32, input_shape(data.value), {}};
    const Tensor tdw{dw.data(), DType::kFloat32, filter_shape(filter.value), {}};

    std::printf("Conv2D 3x3 SAME, x %s, filter %s (kernels: %s, %s)\n", shape_string(x_shape).c_str(),
                shape_string(w_shape).c_str(),
                select_kernel(Direction::kBackwardData, data.value, tdy, tw, tdx).value.c_str(),
                select_kernel(Direction::kBackwardWeights, filter.value, tx, tdy, tdw).value.c_str());
    if (!timed("backward_data", data.value, [&] { return backward_data(data.value, tdy, tw, tdx); })) return 1;
    if (!timed("backward_weights", filter.value, [&] { return backward_weights(filter.value, tx, tdy, tdw); })) return 1;
    double sx = 0, sw = 0;
    for (float v : dx) sx += v;
    for (float v : dw) sw += v;
    std::printf("sum(dx) = %.4f, sum(dw) = %.4f\n", sx, sw);
    return 0;
}
