#!/usr/bin/env bash
# The test command (README, .ci/run): install what is missing, build, run every test, then
# cross-build for ARM64 and run the library tests there under qemu-aarch64.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh -DCONVGRAD_BUILD_TESTS=ON
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
scripts/build-arm64.sh
