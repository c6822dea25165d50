#!/usr/bin/env bash
# Installs the Debian 12 packages convgrad needs, and only those that are missing,
# so a second run is fast and a fresh machine (CI) gets everything.
# `apt-get update` runs at most once, and only when something must be installed.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libhalide14-0-dev llvm-14-dev          # generators are compiled with Halide 14 / LLVM 14
  libgtest-dev libbenchmark-dev          # tests and benchmarks
  libdnnl-dev                            # oneDNN: independent oracle in tests, baseline in bench
  libcli11-dev nlohmann-json3-dev        # convgrad CLI
  libdlpack-dev                          # DLTensor for the C API
  qemu-user-static                       # runs each x86 multitarget ISA path (Haswell/Nehalem/qemu64)
                                         # and the ARM64 build's tests
  g++-aarch64-linux-gnu                  # ARM64 cross build (cmake/aarch64-linux-gnu.cmake)
  libonnx-testdata                       # ONNX ConvTranspose node tests (ground truth)
  ocl-icd-libopencl1 pocl-opencl-icd     # OpenCL kernels run and are tested on PoCL's CPU device
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "install-deps: all packages present"; exit 0; }

echo "install-deps: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
