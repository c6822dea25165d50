#!/usr/bin/env bash
# The main job (README): install what is missing, build, show what this build runs on, and
# compute the gradients of a ResNet-50 layer through the C++ API.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
build/tools/convgrad info
build/examples/quickstart
