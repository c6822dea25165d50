#!/usr/bin/env bash
# One x86 multitarget path: the library test binary rerun on that path (ctest's isa_path_*
# entries). Where this machine's own CPU takes that path (an AVX2 machine and the Haswell
# run), the native run of the same binary already covers it: the entry is skipped (77).
# Where this CPU can run the path but prefers a better one, the whole binary runs natively
# with the path capped (CONVGRAD_MAX_CPU_ISA), and only the quick tests under qemu, on an
# emulated CPU of that path: that it selects the path and its kernels run there, no
# instruction it lacks (emulated AVX2 ran the whole binary in 15+ min on an Intel host, 5x
# emulated SSE4.1's time: the large problems of TfEdge & co. are the natively run part).
# Elsewhere the whole binary runs under qemu. The baseline CPU (no SSE4.1, below the
# kernels' floor) runs only the check that kernels refuse it cleanly.
#   isa_path_run.sh QEMU CPU ISA TEST_BINARY
set -euo pipefail
qemu=$1; cpu=$2; isa=$3; bin=$4
check=--gtest_filter=IsaPath.KernelsRunOnTheExpectedPath
if CONVGRAD_EXPECT_ISA=$isa "$bin" $check >/dev/null 2>&1; then
  echo "isa_path_$isa: this CPU takes the $isa path natively, and the native run covers it"
  exit 77
fi
if [ "$isa" = baseline ]; then
  exec "$qemu" -cpu "$cpu" "$bin" $check
fi
if CONVGRAD_MAX_CPU_ISA=$isa CONVGRAD_EXPECT_ISA=$isa "$bin" $check >/dev/null 2>&1; then
  echo "isa_path_$isa: the whole binary natively at CONVGRAD_MAX_CPU_ISA=$isa"
  CONVGRAD_MAX_CPU_ISA=$isa CONVGRAD_EXPECT_ISA=$isa "$bin"
  echo "isa_path_$isa: the quick tests under qemu -cpu $cpu"
  exec "$qemu" -cpu "$cpu" "$bin" \
    --gtest_filter='-TfEdge.*:DtypeContract.*:OneDnnGraphFixed.*:NextTilePrefetch.*:StreamingStores.*'
fi
exec "$qemu" -cpu "$cpu" "$bin"
