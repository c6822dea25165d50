#pragma once
// The thread pool the kernels' parallel loops run on (halide_set_custom_do_par_for, installed
// with the error handler in halide_bridge.cpp).
//
// Why not Halide 14's own pool: its workers sleep on a condition variable the moment its queue
// is empty, so every parallel loop of every call starts with a futex wake-up of each worker
// (and the caller often sleeps too, waiting for the last task). On the VMs measured, that is
// tens of microseconds a loop: a fifth of a 0.1-0.2 ms depthwise kernel with two parallel
// loops. These workers spin for a while after their last task before they sleep, as OpenMP's
// do (libgomp spins ~300000 pauses by default), so back-to-back calls and a call's successive
// loops find them awake.
//
// Semantics kept from Halide's pool: the calling thread takes part; tasks of one loop run in
// any order, at most `threads` at once; a failing task's result is the loop's (the loop's
// remaining tasks are skipped); loops nest (a task may run a parallel loop). Deterministic
// results never depended on the pool: the kernels fix their reduction order themselves.
#include <cstdint>

#include "HalideRuntime.h"

namespace convgrad {

extern "C" int convgrad_do_par_for(void *user_context, halide_task_t f, int min, int extent, uint8_t *closure);

// Threads for the kernels' parallel loops, the calling thread included (at most 256); 0 or
// less: the default, as halide_set_num_threads(0) meant.
void set_pool_threads(int threads);
int pool_threads();
// HL_NUM_THREADS, else the CPUs this process may run on.
int default_pool_threads();

// How long an idle worker spins before it sleeps, in microseconds (0: it sleeps at once, as
// Halide's did). Default: CONVGRAD_SPIN_US, else kDefaultSpinUs.
void set_pool_spin_us(int microseconds);

}  // namespace convgrad
