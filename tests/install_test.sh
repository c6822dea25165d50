#!/bin/bash
# Installs the built convgrad into a scratch prefix, builds examples/sgd against it with
# find_package (as a user's project would), runs it, and checks that the app needs neither
# libHalide nor LLVM at run time.   usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/lib/pkgconfig/convgrad.pc"
test -f "$work/prefix/include/convgrad.h"
test -f "$work/prefix/include/convgrad/convgrad.h"
cmake -S "$src/examples/sgd" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/build" > "$work/build.log"
"$work/build/sgd"
if ldd "$work/build/sgd" | grep -Ei 'halide|llvm'; then
  echo "the app links libHalide/LLVM at run time" >&2
  exit 1
fi
# pkg-config works too (a C user without CMake).
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs convgrad > "$work/pc.txt"
cc -std=c11 "$src/examples/sgd/sgd.c" $(cat "$work/pc.txt") -lm -o "$work/sgd_pc"
"$work/sgd_pc" > /dev/null
echo "installed package: find_package and pkg-config builds run; no libHalide/LLVM in ldd"
