/* convgrad C API: convolution gradients over DLPack tensors, for C and any FFI.
 *
 *   convgrad_conv_desc d = convgrad_conv_desc_default(2);   // 2-D, NHWC / HWIO
 *   d.strides[0] = d.strides[1] = 2;  d.pads_begin[...] = ...;
 *   if (convgrad_backward_data(&d, &dy, &w, &dx) != CONVGRAD_OK)
 *       fprintf(stderr, "%s\n", convgrad_last_error());
 *
 * The descriptor holds the attributes; batch, channels, groups' channel split and the
 * spatial sizes come from the tensors' shapes, in the layouts the descriptor names:
 *   activations  NXC: [N, spatial..., C]        NCX: [N, C, spatial...]
 *   filters      XIO: [spatial..., C_in/G, C_out]   OIX: [C_out, C_in/G, spatial...]
 *                XGM: [spatial..., G, C_out/G]  (TF depthwise; C_in == G)
 * Spatial arrays are outermost first (D, H, W), `spatial_rank` entries used.
 * Tensors: one lane, float16/bfloat16/float32/float64/int32, all three of one dtype; strides
 * in elements (NULL: row-major), byte_offset honoured (OpenCL: must be 0). Memory: kDLCPU,
 * kDLCUDA (a device pointer) or kDLOpenCL (a cl_mem), on device HL_GPU_DEVICE (default 0).
 * A call runs where its tensors live: on the GPU when any of them is in GPU memory (host
 * tensors are then copied in, and a host result back), else on the CPU. The result
 * tensor is written; nothing else is. Every call returns a status and never aborts; the
 * message of the last failure on this thread is convgrad_last_error().
 * Same semantics as the C++ API (convgrad/convgrad.h), which this wraps. */
#ifndef CONVGRAD_C_API_H
#define CONVGRAD_C_API_H

#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CONVGRAD_C_API_VERSION 1

typedef enum {
    CONVGRAD_OK = 0,
    CONVGRAD_INVALID_ARGUMENT = 2, /* the caller's input is wrong */
    CONVGRAD_UNSUPPORTED = 3,      /* valid, but not in this build or on this device */
    CONVGRAD_INTERNAL = 4          /* a kernel failed at run time */
} convgrad_status;

typedef enum { CONVGRAD_NXC = 0, CONVGRAD_NCX = 1 } convgrad_activation_layout;
typedef enum { CONVGRAD_XIO = 0, CONVGRAD_OIX = 1, CONVGRAD_XGM = 2 } convgrad_filter_layout;

typedef struct {
    int32_t version;      /* CONVGRAD_C_API_VERSION: lets later versions grow the struct */
    int32_t spatial_rank; /* 1, 2 or 3 */
    int64_t groups;       /* 1: dense; C_in: depthwise */
    int64_t strides[3];
    int64_t dilations[3];  /* 1: none */
    int64_t pads_begin[3];
    int64_t pads_end[3];   /* may be negative (trailing rows that get no gradient) */
    int32_t activation_layout; /* convgrad_activation_layout */
    int32_t filter_layout;     /* convgrad_filter_layout */
} convgrad_conv_desc;

/* Strides and dilations 1, no padding, one group, NXC activations, XIO filters. */
convgrad_conv_desc convgrad_conv_desc_default(int32_t spatial_rank);

/* dx = dL/dx from dy = dL/dy and the filter w. */
convgrad_status convgrad_backward_data(const convgrad_conv_desc *desc, const DLTensor *dy, const DLTensor *w,
                                       const DLTensor *dx);

/* dw = dL/dw from the forward input x and dy. */
convgrad_status convgrad_backward_weights(const convgrad_conv_desc *desc, const DLTensor *x, const DLTensor *dy,
                                          const DLTensor *dw);

/* The message of this thread's last failed call ("" if none). Valid until the next call. */
const char *convgrad_last_error(void);

/* Threads the CPU kernels use, the caller's included; 0: the default (HL_NUM_THREADS, else the
   CPUs the process may run on). Idle workers spin CONVGRAD_SPIN_US microseconds (default 1000). */
void convgrad_set_num_threads(int threads);

/* e.g. "convgrad 0.1.0 (C API 1)" */
const char *convgrad_version(void);

#ifdef __cplusplus
}
#endif

#endif /* CONVGRAD_C_API_H */
