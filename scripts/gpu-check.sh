#!/usr/bin/env bash
# The CUDA check, in one command, for a machine with an NVIDIA GPU (the `device` tool's H100):
# build (if needed), run the GPU tests on CUDA, then benchmark the suite on CUDA against
# cuDNN through PyTorch, f32 and f16. Results go to $OUT (or gpu-results/).
#   scripts/gpu-check.sh            # everything
#   SKIP_BENCH=1 scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-results}"
mkdir -p "$out"
{
  echo "== $(date -u) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1 || true
} | tee "$out/env.txt"

if [ ! -x build/tools/convgrad ] || [ ! -x build/tests/convgrad_gpu_tests ]; then
  scripts/build.sh -DCONVGRAD_BUILD_TESTS=ON 2>&1 | tail -20
fi
build/tools/convgrad info | tee "$out/info.txt"

# Every GPU test, CUDA cases included (they skip only where there is no device).
CONVGRAD_TEST_CASES="${CONVGRAD_TEST_CASES:-300}" build/tests/convgrad_gpu_tests 2>&1 | tee "$out/gpu_tests.txt"

if [ -z "${SKIP_BENCH:-}" ]; then
  for dtype in f32 f16; do
    build/tools/convgrad bench --batch bench/suite.conv --device cuda --dtype "$dtype" \
      --json "$out/convgrad_cuda_$dtype.json" > "$out/convgrad_cuda_$dtype.md"
    python3 bench/cudnn_bench.py "$out/convgrad_cuda_$dtype.json" --json "$out/joint_$dtype.json" \
      | tee "$out/cuda_vs_cudnn_$dtype.md"
  done
fi
