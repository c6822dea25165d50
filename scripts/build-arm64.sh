#!/usr/bin/env bash
# Cross-builds convgrad for ARM64 Linux (NEON) in build-arm64/ and runs its tests under
# qemu-aarch64-static. Halide's two-stage flow: the generators run on the host, from the
# host build in build/ (built here if missing); the cross build links no libHalide/LLVM.
# Usage: scripts/build-arm64.sh [extra cmake args for the cross build...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ ! -f build/cmake/convgrad-halide_generators-config.cmake ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build --target convgrad_generators
cmake -S . -B build-arm64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
      -Dconvgrad-halide_generators_DIR="$PWD/build/cmake" "$@"
cmake --build build-arm64 --parallel "$(nproc)"
ctest --test-dir build-arm64 --output-on-failure --parallel "$(nproc)"
