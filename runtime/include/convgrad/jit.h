// convgrad's JIT backend (library convgrad_jit): kernels compiled at run time for one exact
// problem (sizes, strides, dilations, pads, layout and dtype as constants), from the same
// generators and schedules as the AOT kernels, cached in memory and on disk.
//
//   convgrad::jit::enable();                      // once, before the calls that should use it
//   RunOptions o;  o.backend = Backend::kJit;     // compile on first use; kAuto: only use
//   convgrad::backward_data(p, dy, w, dx, o);     // kernels already compiled (memory or disk)
//
// Compiling runs convgrad's generator executable (convgrad_generators, which links libHalide)
// and the C compiler (`cc`) in child processes; this library and its callers never load
// libHalide or LLVM. The disk cache keys each kernel by problem, generator params, host CPU
// features, the generator and schedule sources and the library version; entries are written
// atomically (rename), safe with several threads and processes at once, and a corrupt or
// stale entry is detected when loading, deleted and rebuilt. CPU kernels only.
#pragma once

#include <cstdint>
#include <string>

#include "status.h"

namespace convgrad::jit {

struct Options {
    // Disk cache directory. Empty: $CONVGRAD_CACHE_DIR, else $XDG_CACHE_HOME/convgrad, else
    // ~/.cache/convgrad. When it cannot be written, kernels are compiled in a temporary
    // directory and kept in memory only.
    std::string cache_dir;
    bool disk_cache = true;
    // The generator executable. Empty: $CONVGRAD_GENERATOR, else the one beside the running
    // program, else the build tree's, else the installed one.
    std::string generator;
    // Experiments (`convgrad autoschedule`): schedule with one of Halide 14's autoschedulers,
    // "Mullapudi2016", "Adams2019" or "Li2018", instead of convgrad's schedules. Adams2019
    // reads HL_BEAM_SIZE and its other knobs from the environment (they are part of the key).
    std::string autoscheduler;
    std::string machine_params;  // for the autoscheduler; empty: "<cores>,1048576,40"
    std::string schedule_dir;    // if set, each compile leaves its schedule source (.schedule.h) here
    // Schedule parameters (generators/generator_common.h: ScheduleParams). Empty: the tuned
    // database's (the problem's own entry, else its kernel variant's, as the AOT build uses),
    // unless use_database is false: then the schedules' defaults. `convgrad tune` sets both.
    std::string schedule;
    bool use_database = true;
    // Kernels specialised to the exact problem (its sizes, strides and pads compiled in as
    // constants). False: the same generic kernel the AOT build ships, for the problem's
    // variant and schedule parameters (`convgrad tune` measures what the AOT build runs).
    bool specialise = true;
    std::string database;        // empty: the installed schedules/tuned/<family>.json, else the source tree's
};

// The tuned-schedule database this build reads (AOT build and JIT): its path, and the
// parameters it gives a kernel variant ("" if none).
std::string database_path(const std::string &given = "");
std::string tuned_schedule(const std::string &variant, const std::string &database = "");

// Installs the JIT backend (again: with new options; the memory cache is kept).
Status enable(const Options &options = {});
void disable();

struct Stats {
    int64_t compiles = 0, disk_hits = 0, memory_hits = 0, healed = 0;  // healed: bad disk entries rebuilt
    double compile_ms = 0;        // total wall time of compiles (generator + link)
    bool disk_cache_writable = false;
    std::string cache_dir;
};
Stats stats();
void clear_memory_cache();  // drop loaded kernels' handles (the next call reloads from disk)

// The generator executable the JIT and `convgrad aot` run, found as Options::generator says.
std::string generator_executable(const std::string &given = "");

}  // namespace convgrad::jit
