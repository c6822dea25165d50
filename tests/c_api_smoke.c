/* The C API from plain C: a 1-D data gradient small enough to check by hand.
 * x [1, 4, 1] (NWC), w [2, 1, 1] (WIO) = {2, 3}, stride 1, no padding: y[o] = 2 x[o] + 3 x[o+1],
 * so with dy = {1, 10, 100}: dx = {2, 3 + 20, 30 + 200, 300} = {2, 23, 230, 300}. */
#include <convgrad.h>
#include <stdio.h>

int main(void) {
    float dy[3] = {1, 10, 100}, w[2] = {2, 3}, dx[4] = {-1, -1, -1, -1};
    int64_t dy_shape[3] = {1, 3, 1}, w_shape[3] = {2, 1, 1}, dx_shape[3] = {1, 4, 1};
    const DLDataType f32 = {kDLFloat, 32, 1};
    const DLDevice cpu = {kDLCPU, 0};
    DLTensor tdy = {dy, cpu, 3, f32, dy_shape, NULL, 0};
    DLTensor tw = {w, cpu, 3, f32, w_shape, NULL, 0};
    DLTensor tdx = {dx, cpu, 3, f32, dx_shape, NULL, 0};
    convgrad_conv_desc d = convgrad_conv_desc_default(1);
    if (convgrad_backward_data(&d, &tdy, &tw, &tdx) != CONVGRAD_OK) {
        fprintf(stderr, "convgrad_backward_data: %s\n", convgrad_last_error());
        return 1;
    }
    const float want[4] = {2, 23, 230, 300};
    for (int i = 0; i < 4; i++) {
        if (dx[i] != want[i]) {
            fprintf(stderr, "dx[%d] = %g, want %g\n", i, dx[i], want[i]);
            return 1;
        }
    }
    d.spatial_rank = 5; /* bad input: a status and a message, no crash */
    if (convgrad_backward_data(&d, &tdy, &tw, &tdx) != CONVGRAD_INVALID_ARGUMENT || convgrad_last_error()[0] == 0) {
        fprintf(stderr, "a bad descriptor was not rejected\n");
        return 1;
    }
    printf("%s: C API ok (dx = %g %g %g %g)\n", convgrad_version(), dx[0], dx[1], dx[2], dx[3]);
    return 0;
}
