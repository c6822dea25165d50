# Cross build for ARM64 Linux with Debian's g++-aarch64-linux-gnu; tests run under
# qemu-aarch64-static. The generators run on the host: pass the host build's exported
# generator package, e.g.
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -Dconvgrad-halide_generators_DIR=$PWD/build/cmake
# (scripts/build-arm64.sh does all of it.)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Headers: target ones first, then host header-only packages (DLPack, HalideRuntime.h).
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
# Packages: HalideHelpers and the host's generator export live on the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /usr/aarch64-linux-gnu)
# Debian installs Halide's CMake helpers under the host's multiarch directory.
set(HalideHelpers_DIR /usr/lib/x86_64-linux-gnu/cmake/HalideHelpers14 CACHE PATH "Halide's CMake helpers (host)")
