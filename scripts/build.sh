#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds convgrad (Release) in build/.
# Usage: scripts/build.sh [extra cmake args...]
# CONVGRAD_X86_PATHS (environment): the x86 multitarget's paths, best first (default: all,
# "avx512_skylake;avx2;sse41"); "runnable" keeps those this machine's tests can run, natively
# or under qemu (AVX-512 only on a CPU with it; the same five features as
# runtime/src/cpu_info.cpp's avx512_skylake test): .ci/run's choice, since the AVX-512 code is
# about 40 % of the kernels' compile time and CI's machine may have no way to run it. The
# default is passed explicitly so that a `runnable` build does not stick in CMake's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
paths=${CONVGRAD_X86_PATHS:-avx512_skylake;avx2;sse41}
if [ "$paths" = runnable ]; then
  paths="avx2;sse41"
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  avx512=1
  for f in avx512f avx512cd avx512vl avx512bw avx512dq; do
    [[ " $flags " == *" $f "* ]] || avx512=0
  done
  if [ "$avx512" = 1 ]; then paths="avx512_skylake;$paths"; fi
  echo "build.sh: x86 paths this machine can run: $paths"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCONVGRAD_X86_PATHS=$paths" "$@"
cmake --build build --parallel "$(nproc)"
