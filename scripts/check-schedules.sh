#!/usr/bin/env bash
# Developer check for a Halide 14 bug that has bitten the schedules twice: in some
# specialisation branches Halide drops the update stage of the accumulator (zero results).
# Lowers every CPU kernel variant the build has for every target whose schedules differ (the
# x86 ISA paths AVX-512, AVX2 and SSE4.1, and ARM64) and reports any branch that allocates
# `acc` but never updates it. (The multitarget's plain x86-64 fallback has SSE4.1's vector
# widths, so the same schedules and the same lowered statement: its lowerings added 3 minutes
# to CI and could not find anything SSE4.1's did not.) The functional
# tests (native and under qemu) catch such branches only when their shapes reach them; this
# checks every branch (a ctest).
# The variants and their generator arguments (tuned schedules included) are the build's own:
# cpu_kernels.txt, written by generators/CMakeLists.txt next to the generator (every dtype the
# build was configured with; CI builds them all).
# The lowerings are independent, so they run as parallel jobs, one per core (JOBS to change):
# each takes one core and a few hundred MB (in series the whole set took ~14 min here).
# usage: check-schedules.sh [GENERATOR]   (default: build/generators/convgrad_generators)
set -euo pipefail
cd "$(dirname "$0")/.."
gen=${1:-build/generators/convgrad_generators}
variants=$(dirname "$gen")/cpu_kernels.txt
[ -s "$variants" ] || { echo "check-schedules: no $variants (configure the build first)"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# check_one DIR_NAME GENERATOR_ARGS...: lowers one variant to a statement file in its own
# folder and prints a line for each branch that allocates `acc` but never updates it.
check_one() {
  local dir=$1; shift
  mkdir -p "$dir"
  "$gen" -o "$dir" -e stmt -n k "$@" || { echo "GENERATOR FAILED: $*"; return 1; }
  # The update shows as its loops (acc.s1...), or, fully unrolled, as acc[...] = acc[...] + ...
  awk -v what="$*" '/^external func/{name=$3} /allocate acc\[/{alloc[name]=1} /acc.s1|acc\[[^]]*\] = acc\[/{c[name]++}
       END{for (n in alloc) if (c[n]+0 == 0) print "NO UPDATE in " what ": " n}' "$dir/k.stmt" || return 1
  rm -f "$dir/k.stmt"
}
export -f check_one
export gen
jobs_file=$out/jobs
n=0
for target in x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41 x86-64-linux-avx-avx2-f16c-fma-sse41 \
              x86-64-linux-sse41 arm-64-linux; do
  # Each line: the variant's name, then its generator arguments (no argument has a space).
  while read -r _ args; do
    # int32 takes float32's schedules (same width, no tuned entry of its own): a variant whose
    # arguments are float32's but for the dtype lowers to the same branches, so it is skipped.
    if [[ $args == *dtype=int32* ]] && grep -qxF -- "${args/dtype=int32/dtype=float32}" <(cut -d' ' -f2- "$variants"); then
      continue
    fi
    # The Winograd variants have no `acc` stage (their sums are m_acc, block and part, with
    # no specialisation branches), so their lowerings had nothing to check.
    [[ $args == *winograd=true* ]] && continue
    n=$((n + 1))
    echo "$out/$n $args target=$target-user_context-no_runtime"
  done < "$variants"
done > "$jobs_file"
# xargs exits non-zero if any job failed (a generator error: its line is in the report).
status=0
report=$(xargs -d '\n' -n 1 -P "${JOBS:-$(nproc)}" bash -c 'check_one $1' _ < "$jobs_file") || status=1
if [ -n "$report" ] || [ $status -ne 0 ]; then
  echo "$report"
  exit 1
fi
echo "check-schedules: every accumulator branch of $n lowerings has its update stage"
