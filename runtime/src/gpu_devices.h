// GPU drivers, loaded at run time (the library never links libcuda or libOpenCL, so it runs
// on machines without them): which devices exist, what they can do, and the symbol lookup
// Halide's CUDA and OpenCL runtimes use.
#pragma once

#include <vector>

#include "convgrad/convgrad.h"

namespace convgrad {

// Every device the drivers report; probed once per process. Empty when no driver loads.
const std::vector<DeviceInfo> &gpu_devices();

// The device Halide's GPU runtimes run on: HL_GPU_DEVICE, else 0.
int gpu_device_index();

// The compute capability (major * 10 + minor) of that CUDA device, or 0 when there is none.
int cuda_capability();

// Whether `api` has a usable device, and if not, why (for error messages).
bool device_available(Device api, std::string *why);

}  // namespace convgrad
