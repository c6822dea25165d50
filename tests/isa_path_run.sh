#!/usr/bin/env bash
# One x86 multitarget path: the library test binary rerun on an emulated CPU that takes it
# (ctest's isa_path_* entries). Where this machine's own CPU takes that path (an AVX2
# machine and the Haswell run), the native run of the same binary already covers it: the
# entry is skipped (77) instead of repeating it ~100x slower under qemu. The baseline CPU
# (no SSE4.1, below the kernels' floor) runs only the check that kernels refuse it cleanly.
#   isa_path_run.sh QEMU CPU ISA TEST_BINARY
set -euo pipefail
qemu=$1; cpu=$2; isa=$3; bin=$4
if CONVGRAD_EXPECT_ISA=$isa "$bin" --gtest_filter=IsaPath.KernelsRunOnTheExpectedPath >/dev/null 2>&1; then
  echo "isa_path_$isa: this CPU takes the $isa path natively, and the native run covers it"
  exit 77
fi
if [ "$isa" = baseline ]; then
  exec "$qemu" -cpu "$cpu" "$bin" --gtest_filter=IsaPath.KernelsRunOnTheExpectedPath
fi
exec "$qemu" -cpu "$cpu" "$bin"
