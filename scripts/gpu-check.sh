#!/usr/bin/env bash
# The CUDA check, in one command, for a machine with an NVIDIA GPU (the `device` tool's H100):
# build (if needed), run the GPU tests on CUDA, then benchmark the suite on CUDA against
# cuDNN through PyTorch, f32 and f16, and last the CUDA tests again under compute-sanitizer.
# Results go to $OUT (or gpu-results/).
#   scripts/gpu-check.sh            # everything
#   SKIP_BENCH=1 SKIP_SANITIZER=1 scripts/gpu-check.sh
#   BENCH_DTYPES=f32 scripts/gpu-check.sh   # a shorter lease: one dtype benchmarked
# Where the machine cannot build (the `device` tool's), run scripts/gpu-pack.sh here first.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-results}"
mkdir -p "$out"
{
  echo "== $(date -u) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1 || true
} | tee "$out/env.txt"

if [ ! -x build/tools/convgrad ] || [ ! -x build/tests/convgrad_gpu_tests ]; then
  if [ -f .gpu/convgrad-gpu.tar.xz ]; then
    # Built elsewhere by scripts/gpu-pack.sh: this machine has no Halide to build with.
    xz -dc .gpu/convgrad-gpu.tar.xz | tar -xf -
  else
    scripts/build.sh -DCONVGRAD_BUILD_TESTS=ON 2>&1 | tail -20
  fi
fi
if [ -d build/gpu-libs ]; then
  export LD_LIBRARY_PATH="$PWD/build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
build/tools/convgrad info | tee "$out/info.txt"

# Every GPU test, CUDA cases included (they skip only where there is no device).
CONVGRAD_TEST_CASES="${CONVGRAD_TEST_CASES:-300}" build/tests/convgrad_gpu_tests 2>&1 | tee "$out/gpu_tests.txt"

if [ -z "${SKIP_BENCH:-}" ]; then
  for dtype in ${BENCH_DTYPES:-f32 f16}; do
    build/tools/convgrad bench --batch bench/suite.conv --device cuda --dtype "$dtype" \
      --json "$out/convgrad_cuda_$dtype.json" > "$out/convgrad_cuda_$dtype.md"
    python3 bench/cudnn_bench.py "$out/convgrad_cuda_$dtype.json" --json "$out/joint_$dtype.json" \
      | tee "$out/cuda_vs_cudnn_$dtype.md"
  done
fi

# Device accesses out of bounds (or of uninitialised memory) that happen to give the right
# answers: compute-sanitizer over the CUDA tests, with fewer cases (it slows kernels down).
san="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
if [ -x "$san" ] && [ -z "${SKIP_SANITIZER:-}" ]; then
  CONVGRAD_TEST_CASES=20 "$san" --tool memcheck --error-exitcode 3 \
    build/tests/convgrad_gpu_tests --gtest_filter='*cuda*' 2>&1 | tail -40 | tee "$out/sanitizer.txt"
fi
