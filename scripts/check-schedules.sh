#!/usr/bin/env bash
# Developer check for a Halide 14 bug that has bitten the schedules twice: in some
# specialisation branches Halide drops the update stage of the accumulator (zero results).
# Lowers every generator for every x86 target, dtype and layout and reports any branch that
# allocates `acc` but never updates it. The functional tests (native and under qemu) catch
# such branches only when their shapes reach them; this checks every branch (a ctest).
# Variants are lowered with the tuned parameters the AOT build gives them.
# The lowerings are independent, so they run as parallel jobs, one per core (JOBS to change):
# each takes one core and a few hundred MB (in series the whole set took ~14 min here).
# usage: check-schedules.sh [GENERATOR]   (default: build/generators/convgrad_generators)
set -euo pipefail
cd "$(dirname "$0")/.."
gen=${1:-build/generators/convgrad_generators}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The tuned parameters the AOT build uses (schedules/tuned/, written by `convgrad tune`).
db=schedules/tuned/x86-64.json
tuned() {  # tuned <variant>: its "schedule" in the database, or nothing
  [ -f "$db" ] && awk -v v="\"$1\": {" 'index($0, v) {f = 1}
    f && /"schedule"/ {sub(/.*"schedule": "/, ""); sub(/".*/, ""); print; exit}' "$db"
}
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
declare -A short=([float32]=f32 [float64]=f64 [float16]=f16 [bfloat16]=bf16 [int32]=i32)
jobs_file=$out/jobs
n=0
for target in x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41 x86-64-linux-avx-avx2-f16c-fma-sse41 \
              x86-64-linux-sse41 x86-64-linux arm-64-linux; do
  for dtype in float32 float64 float16 bfloat16 int32; do
    for variant in nxc ncx nxg ncg any nxc_s2 nxg_s2 nxc_sg nxc_cs nxc_pw ncx_px_pw ncx_cs ncx_db ncg_fp; do
      case $variant in  # _s2, _sg, _cs and _pw are the data gradient's alone, _db the filter gradient's
        *_s2) params="layout=${variant%_s2} x_phases=2"; dirs=data ;;
        *_sg) params="layout=${variant%_sg} small_groups=true"; dirs=data ;;
        *_cs) params="layout=${variant%_cs} channel_slabs=true"; dirs=data ;;
        ncx_px_pw) params="layout=ncx pixel_vectors=true pointwise=true"; dirs=data ;;
        *_pw) params="layout=${variant%_pw} pointwise=true"; dirs=data ;;
        *_db) params="layout=${variant%_db} dy_broadcasts=true"; dirs=weights ;;
        *_fp) params="layout=${variant%_fp} flat_planes=true"; dirs="data weights" ;;
        *) params="layout=$variant"; dirs="data weights" ;;
      esac
      for dir in $dirs; do
        schedule=$(tuned "bwd_${dir}_${short[$dtype]}_$variant")
        n=$((n + 1))
        # One line per job; check_one gets it split into words (no argument has a space).
        echo "$out/$n -g convgrad_bwd_$dir target=$target-user_context-no_runtime dtype=$dtype $params ${schedule:+schedule=$schedule}"
      done
    done
  done
done > "$jobs_file"
# xargs exits non-zero if any job failed (a generator error: its line is in the report).
status=0
report=$(xargs -d '\n' -n 1 -P "${JOBS:-$(nproc)}" bash -c 'check_one $1' _ < "$jobs_file") || status=1
if [ -n "$report" ] || [ $status -ne 0 ]; then
  echo "$report"
  exit 1
fi
echo "check-schedules: every accumulator branch of $n lowerings has its update stage"
