#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh runs -- the CLI, the GPU tests and the shared libraries they
# load that a CUDA machine's image may lack (oneDNN, libgomp, the OpenCL loader) -- into
# .gpu/convgrad-gpu.tar.xz. The `device` tool's GPU machines have CUDA and PyTorch but no
# Halide, LLVM or Debian packages, and reach no package registry, so convgrad is built here and
# the pack travels:   scripts/gpu-pack.sh [BUILD_DIR]   then, on the GPU machine,
# scripts/gpu-check.sh, which unpacks it where no build is present.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
for f in "$build/tools/convgrad" "$build/tests/convgrad_gpu_tests"; do
  [ -x "$f" ] || { echo "gpu-pack: $f is missing: build with scripts/build.sh first" >&2; exit 2; }
done
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build/tools" "$stage/build/tests" "$stage/build/gpu-libs"
cp "$build/tools/convgrad" "$stage/build/tools/"
cp "$build/tests/convgrad_gpu_tests" "$stage/build/tests/"
# Every library the two programs load, resolved on this machine, but glibc and the C++ runtime:
# a newer one is there already, and an older one first on the path would break PyTorch.
ldd "$build/tools/convgrad" "$build/tests/convgrad_gpu_tests" |
  awk '/=> \// {print $3}' | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/build/gpu-libs/"; done
mkdir -p .gpu
tar -C "$stage" -cf - build | xz -T2 -4 > .gpu/convgrad-gpu.tar.xz
echo "gpu-pack: .gpu/convgrad-gpu.tar.xz ($(du -h .gpu/convgrad-gpu.tar.xz | cut -f1)) from $build at $(git rev-parse --short HEAD)"
