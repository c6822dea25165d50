#!/usr/bin/env bash
# Schedule work: one kernel variant from two generator executables (or one, with other
# params), A/B in one process on one fixed problem (bench/kernel_ab.cpp), AVX-512 path
# (TARGET=x86-64-linux-avx-avx2-f16c-fma-sse41 for the AVX2 one, on a machine without AVX-512);
# float32, float64 or int32 (PARAMS' dtype).
# The suite's per-problem A/B moves by +-10 % between rounds on this VM; this one by ~3 %.
#   scripts/kernel-ab.sh GEN_A GEN_B GENERATOR "PARAMS" FIXED IN0 IN1 OUT [ROUNDS]
# PARAMS: the variant's generator params (dtype=float32 layout=nxc x_phases=1 ...);
# EXTRA_A / EXTRA_B: params for one side only: `fixed=$FIXED` makes it the JIT kernel,
# `small_groups=true` another variant. Copy build/generators/convgrad_generators aside
# before rebuilding it, to keep the old schedule as GEN_A. Example (rx_g32_28's data
# gradient, AOT against its JIT kernel):
#   f='stride:1,1,1/dilation:1,1,1/pad:1,1,0/dy.extent:8,28,28,1,32,8/dy.stride:1,256,7168,0,8,200704/w.extent:8,8,3,3,1,32/w.stride:256,1,2048,6144,0,8/dx.extent:8,28,28,1,32,8/dx.stride:1,256,7168,0,8,200704'
#   g=build/generators/convgrad_generators
#   EXTRA_B="fixed=$f" scripts/kernel-ab.sh $g $g convgrad_bwd_data "dtype=float32 layout=nxc x_phases=1" "$f" dy w dx
# A -1 in B's fixed string leaves that extent or stride at run time: which constants the
# JIT kernel gains from (e.g. dy.extent:8,-1,-1,1,32,8 and dx's alike: not the spatial sizes).
# scripts/fixed-strings.sh prints a problem's variant and FIXED (its exact views) from the registry.
# PROFILE_B=1: B built with Halide's profiler (its time per Func printed at exit).
# KEEP=DIR: build in DIR and keep it (DIR/kernel_ab for `perf record`).
set -euo pipefail
[ $# -ge 8 ] || { sed -n '2,20p' "$0"; exit 2; }
gen_a=$(realpath "$1"); gen_b=$(realpath "$2"); generator=$3; params=$4; fixed=$5
src=$(realpath "$(dirname "$0")/../bench/kernel_ab.cpp")
if [ -n "${KEEP:-}" ]; then
    work=$KEEP
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
profile_b=""
[ -n "${PROFILE_B:-}" ] && profile_b="-profile"
target=${TARGET:-x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41}-user_context
"$gen_a" -r runtime -o "$work" -e static_library target=$target
# shellcheck disable=SC2086  # params are words
"$gen_a" -g "$generator" -f kern_a -n a -o "$work" -e static_library target=$target-no_runtime $params ${EXTRA_A:-}
# shellcheck disable=SC2086
"$gen_b" -g "$generator" -f kern_b -n b -o "$work" -e static_library target=$target-no_runtime$profile_b $params ${EXTRA_B:-}
c++ -O2 -std=c++17 -I/usr/include/halide14 "$src" "$(dirname "$src")/../runtime/src/kernel_memory.cpp" "$(dirname "$src")/../runtime/src/thread_pool.cpp" "$work/a.a" "$work/b.a" "$work/runtime.a" -o "$work/kernel_ab" -lpthread -ldl
dtype=float32
[[ " $params " =~ \ dtype=([a-z0-9]+)\  ]] && dtype=${BASH_REMATCH[1]}
KERNEL_AB_DTYPE=$dtype "$work/kernel_ab" "$fixed" "$6" "$7" "$8" "${9:-5}"
