#!/usr/bin/env bash
# Developer check for a Halide 14 bug that has bitten the schedules twice: in some
# specialisation branches Halide drops the update stage of the accumulator (zero results).
# Lowers every generator for every x86 target, dtype and layout and reports any branch that
# allocates `acc` but never updates it. The functional tests (native and under qemu) catch
# such branches only when their shapes reach them; this checks every branch (a ctest, ~4 min).
# Variants are lowered with the tuned parameters the AOT build gives them.
# usage: check-schedules.sh [GENERATOR]   (default: build/generators/convgrad_generators)
set -euo pipefail
cd "$(dirname "$0")/.."
gen=${1:-build/generators/convgrad_generators}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
# The tuned parameters the AOT build uses (schedules/tuned/, written by `convgrad tune`).
db=schedules/tuned/x86-64.json
tuned() {  # tuned <variant>: its "schedule" in the database, or nothing
  [ -f "$db" ] && awk -v v="\"$1\": {" 'index($0, v) {f = 1}
    f && /"schedule"/ {sub(/.*"schedule": "/, ""); sub(/".*/, ""); print; exit}' "$db"
}
declare -A short=([float32]=f32 [float64]=f64 [float16]=f16 [bfloat16]=bf16 [int32]=i32)
for target in x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41 x86-64-linux-avx-avx2-f16c-fma-sse41 \
              x86-64-linux-sse41 x86-64-linux arm-64-linux; do
  for dtype in float32 float64 float16 bfloat16 int32; do
    for variant in nxc ncx nxg ncg any nxc_s2 nxg_s2 nxc_sg ncg_fp; do
      case $variant in  # _s2 and _sg are the data gradient's alone
        *_s2) params="layout=${variant%_s2} x_phases=2"; dirs=data ;;
        *_sg) params="layout=${variant%_sg} small_groups=true"; dirs=data ;;
        *_fp) params="layout=${variant%_fp} flat_planes=true"; dirs="data weights" ;;
        *) params="layout=$variant"; dirs="data weights" ;;
      esac
      for dir in $dirs; do
        schedule=$(tuned "bwd_${dir}_${short[$dtype]}_$variant")
        extra=${schedule:+schedule=$schedule}
        "$gen" -g convgrad_bwd_$dir -o "$out" -e stmt -n k target=$target-user_context-no_runtime dtype=$dtype $params $extra
        # The update shows as its loops (acc.s1...), or, fully unrolled, as acc[...] = acc[...] + ...
        bad=$(awk '/^external func/{name=$3} /allocate acc\[/{alloc[name]=1} /acc.s1|acc\[[^]]*\] = acc\[/{c[name]++}
                   END{for (n in alloc) if (c[n]+0 == 0) print n}' "$out/k.stmt")
        if [ -n "$bad" ]; then
          echo "NO UPDATE in $dir $dtype $variant $target: $bad"
          status=1
        fi
      done
    done
  done
done
[ $status -eq 0 ] && echo "check-schedules: every accumulator branch has its update stage"
exit $status
