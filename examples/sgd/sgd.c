/* Train a tiny convolution layer with gradients from convgrad (the C API).
 *
 * A 3x3 filter w (2 -> 3 channels, NHWC / HWIO, SAME padding) is fitted to a target filter
 * from examples alone: loss(w) = 0.5 * sum (conv(x, w) - conv(x, w_true))^2. convgrad gives
 * dL/dw (convgrad_backward_weights) and dL/dx (convgrad_backward_data) from dy = y - y_true;
 * both are first checked against central finite differences of the loss (exact for a
 * quadratic, up to rounding), then 60 SGD steps must shrink the loss by 10^4. Exit 0 on
 * success. The forward convolution is written plainly here; only the gradients come from
 * the library. */
#include <convgrad.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 2, H = 8, W = 8, CI = 2, CO = 3, K = 3 };
#define XS (N * H * W * CI)
#define YS (N * H * W * CO)
#define WS (K * K * CI * CO)

static float x[XS], dy[YS], dw[WS], dx[XS];
static double y_true[YS];
static double w[WS], w_true[WS], xd[XS];

/* y = conv(x, w), SAME (pad 1), stride 1; x and w in double for the finite differences. */
static void forward(const double *xd, const double *wd, double *y) {
    for (int n = 0; n < N; n++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++)
                for (int o = 0; o < CO; o++) {
                    double s = 0;
                    for (int ki = 0; ki < K; ki++)
                        for (int kj = 0; kj < K; kj++) {
                            const int ii = i + ki - 1, jj = j + kj - 1;
                            if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                            for (int c = 0; c < CI; c++)
                                s += xd[((n * H + ii) * W + jj) * CI + c] * wd[((ki * K + kj) * CI + c) * CO + o];
                        }
                    y[((n * H + i) * W + j) * CO + o] = s;
                }
}

static double loss(const double *wd, const double *xdd) {
    static double y[YS];
    forward(xdd, wd, y);
    double l = 0;
    for (int i = 0; i < YS; i++) l += 0.5 * (y[i] - y_true[i]) * (y[i] - y_true[i]);
    return l;
}

/* dy = y - y_true for the current w (as float32: what a framework would hand over). */
static double set_dy(void) {
    static double y[YS];
    forward(xd, w, y);
    double l = 0;
    for (int i = 0; i < YS; i++) {
        dy[i] = (float)(y[i] - y_true[i]);
        l += 0.5 * (y[i] - y_true[i]) * (y[i] - y_true[i]);
    }
    return l;
}

/* The worst relative difference between `grad` and the central finite difference of the
 * loss in every `step`-th element of `param` (w or x). The loss is quadratic, so the
 * central difference is exact up to rounding whatever the step h. */
static double worst_fd_error(double *param, int count, int step, const float *grad) {
    const double h = 0.5;
    double worst = 0;
    for (int i = 0; i < count; i += step) {
        const double keep = param[i];
        param[i] = keep + h;
        const double lp = loss(w, xd);
        param[i] = keep - h;
        const double lm = loss(w, xd);
        param[i] = keep;
        const double fd = (lp - lm) / (2 * h);
        worst = fmax(worst, fabs(fd - grad[i]) / fmax(1.0, fabs(fd)));
    }
    return worst;
}

static int gradients(const convgrad_conv_desc *d, const float *wf) {
    int64_t xs[4] = {N, H, W, CI}, ys[4] = {N, H, W, CO}, ws[4] = {K, K, CI, CO};
    const DLDataType f32 = {kDLFloat, 32, 1};
    const DLDevice cpu = {kDLCPU, 0};
    DLTensor tx = {x, cpu, 4, f32, xs, NULL, 0}, ty = {dy, cpu, 4, f32, ys, NULL, 0};
    DLTensor tdw = {dw, cpu, 4, f32, ws, NULL, 0}, tdx = {dx, cpu, 4, f32, xs, NULL, 0};
    DLTensor tw = {(void *)wf, cpu, 4, f32, ws, NULL, 0};
    if (convgrad_backward_weights(d, &tx, &ty, &tdw) != CONVGRAD_OK ||
        convgrad_backward_data(d, &ty, &tw, &tdx) != CONVGRAD_OK) {
        fprintf(stderr, "convgrad: %s\n", convgrad_last_error());
        return 0;
    }
    return 1;
}

static double uniform(void) { return 2.0 * rand() / RAND_MAX - 1.0; }

int main(void) {
    srand(7);
    for (int i = 0; i < XS; i++) xd[i] = x[i] = (float)uniform();
    for (int i = 0; i < WS; i++) {
        w_true[i] = uniform();
        w[i] = (float)(0.3 * uniform());
    }
    {
        static double y[YS];
        forward(xd, w_true, y);
        for (int i = 0; i < YS; i++) y_true[i] = y[i];
    }
    convgrad_conv_desc d = convgrad_conv_desc_default(2);
    d.pads_begin[0] = d.pads_begin[1] = 1;
    d.pads_end[0] = d.pads_end[1] = 1;

    /* 1. Gradients against central finite differences (w exactly representable in float32,
     * so the library and the loss see the same filter). */
    float wf[WS];
    for (int i = 0; i < WS; i++) wf[i] = (float)w[i], w[i] = wf[i];
    set_dy();
    if (!gradients(&d, wf)) return 1;
    const double worst_w = worst_fd_error(w, WS, 1, dw), worst_x = worst_fd_error(xd, XS, 7, dx);
    printf("finite differences: worst relative error dL/dw %.2e, dL/dx %.2e\n", worst_w, worst_x);
    if (!(worst_w < 1e-4 && worst_x < 1e-4)) {
        fprintf(stderr, "gradients disagree with finite differences\n");
        return 1;
    }

    /* 2. SGD. */
    const double first = set_dy();
    double l = first;
    for (int step = 0; step < 60; step++) {
        for (int i = 0; i < WS; i++) wf[i] = (float)w[i];
        if (!gradients(&d, wf)) return 1;
        for (int i = 0; i < WS; i++) w[i] -= 0.004 * dw[i];
        l = set_dy();
        if (step % 10 == 9) printf("step %2d  loss %.6g\n", step + 1, l);
    }
    printf("loss %.6g -> %.6g (%s)\n", first, l, convgrad_version());
    return l < first * 1e-4 ? 0 : 1;
}
