#!/usr/bin/env bash
# Prints, for one problem, the kernel variant the registry picks and the JIT's `fixed` string
# of its exact problem (the views the runtime passes it: flat planes included), which
# scripts/kernel-ab.sh takes. It compiles the problem's JIT kernel into a temporary cache
# (`convgrad bench --backend jit`, seconds to a minute) and reads the string back from it.
#   scripts/fixed-strings.sh DESCRIPTOR [nhwc|nchw] [BWD_D|BWD_W|both]
# Each kernel prints two lines: "GENERATOR DTYPE VARIANT", then FIXED. kernel-ab.sh's PARAMS
# are the variant's generator params: layout=BASE plus one per suffix, as
# generators/CMakeLists.txt maps them (_fp flat_planes=true, _ip dy_in_place=true, _gt
# group_tasks=true, _wr whole_reduction=true, _xp plain_x=true, _sd staged_dy=true, _sg small_groups=true, ...).
# e.g. scripts/fixed-strings.sh 'g960mb8ic960ih7iw7oc960oh7ow7kh3kw3sh1sw1ph1pw1dh0dw0n"mb_dw960_7"' nchw BWD_W
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,11p' "$0"; exit 2; }
cli=$(realpath "$(dirname "$0")/../build/tools/convgrad")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "$1" > "$work/problem.conv"
dirs=${3:-both}
[ "$dirs" = both ] && dirs="BWD_D BWD_W"
for dir in $dirs; do
    CONVGRAD_CACHE_DIR="$work/$dir" "$cli" bench --batch "$work/problem.conv" --layout "${2:-nhwc}" \
        --dir "$dir" --backend jit > "$work/bench.log" 2>&1 || { cat "$work/bench.log"; exit 1; }
    for f in "$work/$dir"/*.so; do
        # "... generator G dtype T variant V cpu ... fixed F"
        # (Through a file: with pipefail, grep -m1 closing the pipe early failed the script.)
        strings "$f" > "$work/strings.txt"
        grep -m1 ' fixed ' "$work/strings.txt" | sed -E 's/.* generator ([^ ]+) dtype ([^ ]+) variant ([^ ]+) .* fixed (.*)/\1 \2 \3\n\4/'
    done
done
