# Helpers that turn the two generators into AOT kernel variants.
#
# Every variant is an x86-64 multitarget object (one function, one body per ISA, picked at
# run time) and they all share ONE Halide runtime: several runtimes in one binary are merged
# silently by the linker, and if the AVX-512 one wins, older CPUs die with SIGILL.

# Order matters: Halide's multitarget wrapper takes the first target the CPU supports, and
# runs the last one without asking. SSE4.1 is that floor (every x86-64 CPU since 2011 has
# it; the mission's paths are AVX-512, AVX2 and SSE4.1): the runtime refuses CPUs without it
# with an error status (runtime/src/halide_bridge.cpp) instead of letting its code fault.
# A featureless x86-64 path would cost a fifth of the kernels' compile time for no CPU in use.
# Some refinements' floor is AVX2 (FROM_AVX2 below; generators/CMakeLists.txt picks them):
# the registry skips them on CPUs without it (KernelEntry::from_avx2) and the runtime refuses
# a direct call there.
# CONVGRAD_X86_PATHS narrows the build to the paths a machine can test: CI's test build
# leaves out AVX-512 where its CPU lacks it (scripts/build.sh, CONVGRAD_X86_PATHS=runnable).
# ARM64 (cross builds): plain NEON. The arm_dot_prod / arm_fp16 features speed up int8 dot
# products and f16 arithmetic; these kernels accumulate floats in f32 and int32 in 32 bits,
# so neither feature would change their code.
set(CONVGRAD_X86_PATHS avx512_skylake avx2 sse41 CACHE STRING
    "x86 multitarget paths to build, best first; sse41, the fallback, last")
set(convgrad_x86_features_avx512_skylake avx-avx2-avx512-avx512_skylake-f16c-fma-sse41)
set(convgrad_x86_features_avx2 avx-avx2-f16c-fma-sse41)
set(convgrad_x86_features_sse41 sse41)
if (CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(CONVGRAD_HALIDE_TARGETS arm-64-linux)
  set(CONVGRAD_X86 OFF)
else ()
  set(CONVGRAD_X86 ON)
  list(GET CONVGRAD_X86_PATHS -1 last_path)
  if (NOT last_path STREQUAL "sse41")
    message(FATAL_ERROR "CONVGRAD_X86_PATHS must end with sse41, the fallback (got '${CONVGRAD_X86_PATHS}')")
  endif ()
  set(CONVGRAD_HALIDE_TARGETS "")
  foreach (path ${CONVGRAD_X86_PATHS})
    if (NOT DEFINED convgrad_x86_features_${path})
      message(FATAL_ERROR "CONVGRAD_X86_PATHS: unknown path '${path}' (avx512_skylake, avx2, sse41)")
    endif ()
    list(APPEND CONVGRAD_HALIDE_TARGETS x86-64-linux-${convgrad_x86_features_${path}})
  endforeach ()
endif ()
# GPU kernel variants (generators/CMakeLists.txt): CUDA PTX for these capabilities, and
# OpenCL C, with host code for baseline x86-64. Halide 14 knows capabilities up to 86; newer
# GPUs (sm_90) run the highest PTX at or below their capability, which the driver compiles.
option(CONVGRAD_GPU "Build CUDA and OpenCL kernel variants (x86-64 hosts)" ON)
if (CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(CONVGRAD_GPU OFF)
endif ()
set(CONVGRAD_CUDA_CAPABILITIES 86 80 70)  # highest first: the registry takes the first that fits
set(CONVGRAD_GPU_HOST_TARGET x86-64-linux)

# Tuned schedule parameters (`convgrad tune` writes them): one database per target family,
# read here for every AOT variant and by the JIT. Keys inside are qualified by ISA path.
if (CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(CONVGRAD_SCHEDULE_FAMILY arm-64)
else ()
  set(CONVGRAD_SCHEDULE_FAMILY x86-64)
endif ()
set(CONVGRAD_SCHEDULE_DB ${PROJECT_SOURCE_DIR}/schedules/tuned/${CONVGRAD_SCHEDULE_FAMILY}.json)
set(CONVGRAD_SCHEDULE_JSON "{}")
if (EXISTS ${CONVGRAD_SCHEDULE_DB})
  file(READ ${CONVGRAD_SCHEDULE_DB} CONVGRAD_SCHEDULE_JSON)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CONVGRAD_SCHEDULE_DB})
endif ()

# convgrad_tuned_schedule(<variant> <out var>): the database's parameters for a variant, or "".
function(convgrad_tuned_schedule VARIANT OUT)
  string(JSON value ERROR_VARIABLE err GET "${CONVGRAD_SCHEDULE_JSON}" variants ${VARIANT} schedule)
  if (err)
    set(value "")
  endif ()
  set(${OUT} "${value}" PARENT_SCOPE)
endfunction()

# user_context: each call passes its own error slot, so errors are per call, not global.
set(CONVGRAD_KERNEL_FEATURES user_context)

# The first kernel creates the shared runtime (named <first kernel>.runtime); every later
# kernel passes USE_RUNTIME, which also adds its targets to the runtime's target union.
set(CONVGRAD_RUNTIME "" CACHE INTERNAL "")
set(CONVGRAD_KERNEL_TARGETS "" CACHE INTERNAL "")

# convgrad_add_kernel(<name> GENERATOR <gen> PARAMS <k=v>... [TARGETS <halide target>...]
#                     [FROM_AVX2])
#   Builds one kernel variant named <name> (the C function is convgrad_<name>), for the CPU
#   targets above unless TARGETS names others (the GPU variants). FROM_AVX2: the x86
#   multitarget without its SSE4.1 body, AVX2 the fallback (refinements that lose on the
#   SSE4.1 path, generators/CMakeLists.txt; the registry gives them no CPU that lacks AVX2);
#   the caller leaves such a kernel out where CONVGRAD_X86_PATHS has no AVX2.
function(convgrad_add_kernel NAME)
  cmake_parse_arguments(ARG "FROM_AVX2" "GENERATOR" "PARAMS;TARGETS" ${ARGN})
  set(cpu OFF)
  if (NOT ARG_TARGETS)
    set(cpu ON)
    set(ARG_TARGETS ${CONVGRAD_HALIDE_TARGETS})
    if (ARG_FROM_AVX2)
      list(REMOVE_ITEM ARG_TARGETS x86-64-linux-${convgrad_x86_features_sse41})
    endif ()
  endif ()
  convgrad_tuned_schedule(${NAME} tuned)
  if (tuned)
    list(APPEND ARG_PARAMS schedule=${tuned})
  endif ()
  if (cpu)
    # The CPU variants' exact generator arguments, for schedule work: lowering or timing one
    # variant as the build compiles it (generators/CMakeLists.txt writes cpu_kernels.txt).
    string(REPLACE ";" " " args "-g ${ARG_GENERATOR};${ARG_PARAMS}")
    set_property(GLOBAL APPEND PROPERTY CONVGRAD_CPU_KERNEL_ARGS "${NAME} ${args}")
  endif ()
  set(lib convgrad_${NAME})
  set(use_runtime "")
  if (CONVGRAD_RUNTIME)
    set(use_runtime USE_RUNTIME ${CONVGRAD_RUNTIME})
  endif ()
  add_halide_library(${lib} FROM convgrad::halide_generators::convgrad_generators
                     GENERATOR ${ARG_GENERATOR}
                     TARGETS ${ARG_TARGETS}
                     FEATURES ${CONVGRAD_KERNEL_FEATURES}
                     ${use_runtime}
                     PARAMS ${ARG_PARAMS}
                     ${CONVGRAD_KERNEL_EXTRA_OUTPUTS})
  if (NOT CONVGRAD_RUNTIME)
    set(CONVGRAD_RUNTIME ${lib}.runtime CACHE INTERNAL "")
  endif ()
  set(CONVGRAD_KERNEL_TARGETS ${CONVGRAD_KERNEL_TARGETS} ${lib} CACHE INTERNAL "")
endfunction()
