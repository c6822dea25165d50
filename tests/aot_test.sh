#!/bin/bash
# `convgrad aot` end to end for another target: emits an ARM64 kernel library project, builds
# and installs it with the aarch64 toolchain, cross-builds examples/sgd against it
# (find_package) and runs that app under qemu-aarch64 (gradients checked against finite
# differences, 60 SGD steps). Then the same for the host target. The ARM64 library holds the
# channels-first depthwise (ncg) variants beside the generic one, so its dispatch table has
# refinements to route past; the host one the generic kernels alone (`--layouts any`).
# `convgrad aot` runs the generator once per kernel in series, and every kernel here is
# compile time in ctest: the 13 nxc variants took 166 s for the host alone on a 2 GHz Zen 1,
# and as long again for ARM64; on a Xeon, in ctest, the whole test took 190 s with the ncg
# variants in both libraries and 103 s with the host's generic alone (the ARM64 build,
# scripts/build-arm64.sh, cross-builds every variant's table already, and the x86 build the
# host's).
# usage: aot_test.sh CONVGRAD_CLI SOURCE_DIR
set -euo pipefail
cli=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
toolchain="$src/cmake/aarch64-linux-gnu.cmake"
for target in arm-64-linux host; do
  tc=()
  run=()
  layouts=any
  if [ "$target" = arm-64-linux ]; then
    layouts=ncg
    tc=(-DCMAKE_TOOLCHAIN_FILE="$toolchain")
    run=(qemu-aarch64-static -L /usr/aarch64-linux-gnu)
  fi
  "$cli" aot --target "$target" --ops bwd_data,bwd_weights --dtypes f32 --layouts "$layouts" -o "$work/$target" > "$work/aot.log"
  cmake -S "$work/$target" -B "$work/$target/build" -G Ninja "${tc[@]}" > "$work/configure.log"
  cmake --build "$work/$target/build" > "$work/build.log"
  cmake --install "$work/$target/build" --prefix "$work/$target-prefix" > /dev/null
  cmake -S "$src/examples/sgd" -B "$work/sgd-$target" -G Ninja "${tc[@]}" -DCMAKE_PREFIX_PATH="$work/$target-prefix" \
        > "$work/sgd-configure.log"
  cmake --build "$work/sgd-$target" > "$work/sgd-build.log"
  echo "== $target"
  "${run[@]}" "$work/sgd-$target/sgd"
done
# Bad input: a clear message and exit 2, nothing half-written.
if "$cli" aot --target arm-64-linux --dtypes f8 -o "$work/bad" 2> "$work/err.txt"; then exit 1; fi
grep -q -- "--dtypes: unknown 'f8'" "$work/err.txt"
test ! -e "$work/bad"
echo "convgrad aot: ARM64 and host libraries built, the app ran on both"
