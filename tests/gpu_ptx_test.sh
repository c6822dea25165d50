#!/usr/bin/env bash
# The CUDA kernels' PTX holds no `trap`. Halide's CUDA back end turns an assertion inside a
# kernel into one, and a trap that fires kills the process's CUDA context: that call and
# every later one fail (CUDA_ERROR_LAUNCH_FAILED). Nor does it use local memory: these kernels
# keep no per-thread arrays, and the one they once had was indexed out of bounds (bfloat16
# read garbage from it on an H100). CI has no GPU, so this reads the PTX that the built
# kernel objects embed. usage: gpu_ptx_test.sh GENERATORS_BUILD_DIR
set -euo pipefail
dir=$1
shopt -s nullglob
objs=("$dir"/convgrad_*_cuda*.o)
[ ${#objs[@]} -gt 0 ] || { echo "gpu_ptx_test: no CUDA kernel objects in $dir"; exit 1; }
status=0
for o in "${objs[@]}"; do
  ptx=$(strings -n 3 "$o")
  entries=$(grep -c '^\.visible \.entry' <<<"$ptx" || true)
  traps=$(grep -c 'trap;' <<<"$ptx" || true)
  if [ "$entries" -eq 0 ]; then echo "$o: no PTX kernel found"; status=1; fi
  locals=$(grep -c -E '(ld|st)\.local' <<<"$ptx" || true)
  if [ "$traps" -gt 0 ]; then echo "$o: $traps trap(s) in $entries kernel(s)"; status=1; fi
  if [ "$locals" -gt 0 ]; then echo "$o: $locals local-memory access(es) in $entries kernel(s)"; status=1; fi
done
echo "gpu_ptx_test: ${#objs[@]} CUDA kernel objects read"
exit $status
