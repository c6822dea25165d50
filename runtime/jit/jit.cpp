// The JIT backend: a JitProvider (runtime/src/jit_hook.h) that compiles registry entries
// specialised to one problem by running the generator executable, links them into a shared
// object, and caches them in memory and on disk (see convgrad/jit.h).
#include "convgrad/jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "convgrad/convgrad.h"
#include "halide_bridge.h"
#include "jit_hook.h"
#include "kernel_variant.h"

extern char **environ;

namespace convgrad::jit {
namespace {

namespace fs = std::filesystem;

// Two 64-bit FNV-1a hashes with different offsets: a 128-bit name for a key. The full key is
// also stored in the entry and compared when loading, so a collision can never load the
// wrong kernel.
std::string hash_name(const std::string &text) {
    auto fnv = [&](uint64_t h) {
        for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
        return h;
    };
    char buf[40];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(fnv(14695981039346656037ull)),
                  static_cast<unsigned long long>(fnv(0x9e3779b97f4a7c15ull)));
    return buf;
}

std::string default_cache_dir() {
    if (const char *d = std::getenv("CONVGRAD_CACHE_DIR"); d && *d) return d;
    if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/convgrad";
    if (const char *h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/convgrad";
    return "";
}

// Runs argv (no shell), stdout and stderr into `log`; returns the exit status, -1 if it did not run.
int run_process(const std::vector<std::string> &argv, const std::string &log) {
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_text(const std::string &path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    if (s.size() > 2000) s = "..." + s.substr(s.size() - 2000);
    return s;
}

// The Halide target of JIT kernels: the ISA path the AOT multitarget would pick on this CPU
// (convgrad info), not Halide's `host`, which on this AMD Zen 4 claims avx512_sapphirerapids
// and then emits instructions the CPU lacks (SIGILL seen with an autoscheduled pipeline).
const std::string &jit_target() {
    static const std::string target = [] {  // once: CPUID traps to the hypervisor in VMs
        const std::string path = expected_isa_path();
#if defined(__aarch64__)
        (void)path;
        return std::string("arm-64-linux-user_context");
#else
        if (path == "avx512_skylake") return std::string("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41-user_context");
        if (path == "avx2") return std::string("x86-64-linux-avx-avx2-f16c-fma-sse41-user_context");
        if (path == "sse41") return std::string("x86-64-linux-sse41-user_context");
        return std::string("x86-64-linux-user_context");
#endif
    }();
    return target;
}

std::string machine_params(const Options &o) {
    if (!o.machine_params.empty()) return o.machine_params;
    return std::to_string(std::max(1u, std::thread::hardware_concurrency())) + ",1048576,40";
}

// Who schedules: convgrad's schedules, or an autoscheduler with its parameters and knobs.
std::string schedule_key(const Options &o) {
    if (o.autoscheduler.empty()) return "convgrad";
    std::string k = o.autoscheduler + " " + machine_params(o);
    for (const char *env : {"HL_BEAM_SIZE", "HL_RANDOM_DROPOUT", "HL_SEED", "HL_WEIGHTS_DIR", "HL_NO_SUBTILING"}) {
        if (const char *v = std::getenv(env)) k += std::string(" ") + env + "=" + v;
    }
    return k;
}

// The schedule parameters a kernel is compiled with (see Options::schedule).
std::string schedule_params(const KernelEntry &base, const Options &o) {
    if (!o.schedule.empty() || !o.use_database) return o.schedule;
    return tuned_schedule(base.name, o.database);
}

// What identifies a kernel: everything that changes its code.
std::string key_text(const KernelEntry &base, const std::string &fixed, const Options &o) {
    // Read once: CPUID traps to the hypervisor in VMs (~100 us per call here).
    static const std::string cpu = [] {
        std::string s;
        for (const std::string &f : host_cpu_features()) s += f + ",";
        return s;
    }();
    const bool data = base.direction == Direction::kBackwardData;
    return std::string("convgrad ") + CONVGRAD_VERSION + " sources " + CONVGRAD_JIT_SOURCE_HASH + " target " +
           jit_target() + " generator " +
           (data ? "convgrad_bwd_data" : "convgrad_bwd_weights") + " dtype " + dtype_name(base.dtype) + " variant " +
           base.layout + " cpu " + cpu + " schedule " + schedule_key(o) + " params " + schedule_params(base, o) +
           " fixed " + fixed;
}

struct Loaded {
    void *handle = nullptr;
    KernelFn fn = nullptr;
};

class Jit final : public JitProvider {
public:
    explicit Jit(Options o) : options_(std::move(o)) { configure(); }

    void reconfigure(Options o) {
        std::lock_guard<std::mutex> lock(mutex_);
        options_ = std::move(o);
        configure();
    }

    Result<KernelFn> kernel(const KernelEntry &base, const std::string &problem_text, JitLookup how) override {
        // Steady state: this (variant, problem) was served before under these options, so the
        // key (a few hundred characters, formatted and hashed) need not be built again (AOT
        // dispatch 1.2 us a call, the JIT's with the key 3.6 us).
        std::string seen = std::string(base.name) + '\n' + problem_text;
        Options options;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = seen_.find(seen);
            if (it != seen_.end()) {
                if (how != JitLookup::kPeek) stats_.memory_hits++;
                return it->second;
            }
            options = options_;
        }
        const std::string fixed = options.specialise ? problem_text : "";
        const std::string text = key_text(base, fixed, options), name = hash_name(text);
        if (KernelFn fn = from_memory(name, how != JitLookup::kPeek)) return remember_seen(seen, fn);
        if (how == JitLookup::kPeek) return Status::unsupported("jit: not loaded");
        // One thread per key compiles or loads; the others wait for it, then hit memory.
        std::shared_ptr<std::mutex> key_mutex;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto &m = key_mutexes_[name];
            if (!m) m = std::make_shared<std::mutex>();
            key_mutex = m;
        }
        std::lock_guard<std::mutex> key_lock(*key_mutex);
        if (KernelFn fn = from_memory(name, true)) return remember_seen(seen, fn);  // another thread loaded it meanwhile
        const fs::path entry = cache_dir_.empty() ? fs::path() : fs::path(cache_dir_) / (name + ".so");
        if (!entry.empty() && fs::exists(entry)) {
            auto l = load(entry, text, name);
            if (l.is_ok()) return remember_seen(seen, remember(name, l.value, &Stats::disk_hits));
            // Corrupt, truncated or from another build: delete it and build it again.
            std::error_code ec;
            fs::remove(entry, ec);
            std::lock_guard<std::mutex> lock(mutex_);
            stats_.healed++;
        }
        if (how != JitLookup::kCompile) return Status::unsupported("jit: no compiled kernel for this problem yet");
        auto l = compile(base, fixed, text, name, entry, options);
        if (!l.is_ok()) return l.status;
        return remember_seen(seen, remember(name, l.value, &Stats::compiles));
    }

    Stats stats() {
        std::lock_guard<std::mutex> lock(mutex_);
        writable();
        return stats_;
    }
    void clear_memory() {
        std::lock_guard<std::mutex> lock(mutex_);
        memory_.clear();  // handles stay open: running kernels keep their code
        seen_.clear();
    }

private:
    void configure() {
        seen_.clear();  // new options: new keys
        cache_dir_ = options_.disk_cache ? (options_.cache_dir.empty() ? default_cache_dir() : options_.cache_dir) : "";
        stats_.cache_dir = cache_dir_;
        writable_checked_ = false;
    }

    // Whether compiled kernels can be stored: checked (creating the directory) only when
    // first needed, so lookups alone never create a cache. Caller holds mutex_.
    bool writable() {
        if (writable_checked_) return writable_;
        writable_checked_ = true;
        writable_ = false;
        std::error_code ec;
        if (!cache_dir_.empty()) fs::create_directories(cache_dir_, ec);
        if (!cache_dir_.empty() && !ec) {
            // Try it: root ignores permission bits.
            const std::string probe = cache_dir_ + "/.probe-" + std::to_string(getpid());
            const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (fd >= 0) {
                close(fd);
                unlink(probe.c_str());
                writable_ = true;
            }
        }
        stats_.disk_cache_writable = writable_;
        return writable_;
    }

    // A loaded kernel, or nullptr; `count`: a memory hit for the statistics.
    KernelFn from_memory(const std::string &name, bool count) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = memory_.find(name);
        if (it == memory_.end()) return nullptr;
        if (count) stats_.memory_hits++;
        return it->second.fn;
    }

    KernelFn remember_seen(const std::string &seen, KernelFn fn) {
        std::lock_guard<std::mutex> lock(mutex_);
        seen_[seen] = fn;
        return fn;
    }

    KernelFn remember(const std::string &name, const Loaded &l, int64_t Stats::*counter) {
        std::lock_guard<std::mutex> lock(mutex_);
        memory_[name] = l;
        stats_.*counter += 1;
        return l.fn;
    }

    // dlopen + checks: the stored key must equal ours (not just its hash), and the kernel's
    // runtime gets convgrad's hooks (its default error handler would abort(); its own thread
    // pool would be a second one, Halide's, in the process).
    Result<Loaded> load(const fs::path &path, const std::string &text, const std::string &name) {
        void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr) return Status::internal(std::string("jit: cannot load ") + path.string() + ": " + dlerror());
        auto *stored = static_cast<const char *>(dlsym(h, "convgrad_jit_key"));
        auto fn = reinterpret_cast<KernelFn>(dlsym(h, ("convgrad_jit_" + name).c_str()));
        if (stored == nullptr || text != stored || fn == nullptr || !install_hooks_in(h)) {
            dlclose(h);
            return Status::internal("jit: " + path.string() + " is not the kernel it is named for");
        }
        return Loaded{h, fn};
    }

    Result<Loaded> compile(const KernelEntry &base, const std::string &fixed, const std::string &text,
                           const std::string &name, const fs::path &entry, const Options &options) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::string generator = generator_executable(options.generator);
        if (!fs::exists(generator)) {
            return Status::unsupported("jit: the generator executable was not found (" + generator +
                                       "); set CONVGRAD_GENERATOR");
        }
        // Work in a private directory inside the cache (same filesystem: the final rename is
        // atomic), or in /tmp when the cache cannot be written.
        bool store = false;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            store = writable();
        }
        std::string tmpl = (store ? cache_dir_ : fs::temp_directory_path().string()) + "/.build-XXXXXX";
        if (mkdtemp(tmpl.data()) == nullptr) return Status::internal("jit: cannot create a build directory in " + tmpl);
        const fs::path dir = tmpl;
        struct Cleanup {
            fs::path dir;
            ~Cleanup() {
                std::error_code ec;
                fs::remove_all(dir, ec);
            }
        } cleanup{dir};

        const bool data = base.direction == Direction::kBackwardData;
        std::vector<std::string> gen_args = {generator,
                                             "-g", data ? "convgrad_bwd_data" : "convgrad_bwd_weights",
                                             "-f", "convgrad_jit_" + name,
                                             "-o", dir.string(),
                                             "-e", options.schedule_dir.empty() ? "object" : "object,schedule",
                                             "-n", "kernel",
                                             "target=" + jit_target(),
                                             std::string("dtype=") + dtype_name(base.dtype)};
        if (!fixed.empty()) gen_args.push_back("fixed=" + fixed);  // (empty: generic, as the AOT build)
        for (const std::string &p : KernelVariant::parse(base.layout).generator_params(data)) gen_args.push_back(p);
        // (The generator's command line rejects an empty value.)
        if (const std::string params = schedule_params(base, options); !params.empty()) {
            gen_args.push_back("schedule=" + params);
        }
        if (!options.autoscheduler.empty()) {
            std::string lib = options.autoscheduler;
            for (char &c : lib) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            for (const std::string &a : {std::string("-p"), std::string(CONVGRAD_AUTOSCHEDULER_DIR) + "/libautoschedule_" + lib + ".so",
                                         std::string("-s"), options.autoscheduler, std::string("auto_schedule=true"),
                                         "machine_params=" + machine_params(options)}) {
                gen_args.push_back(a);
            }
        }
        const std::string log = (dir / "log.txt").string();
        if (run_process(gen_args, log) != 0) {
            return Status::internal("jit: the generator failed for " + std::string(base.name) + ": " + read_text(log));
        }
        if (!options.schedule_dir.empty()) {
            std::error_code ec;
            fs::create_directories(options.schedule_dir, ec);
            fs::copy_file(dir / "kernel.schedule.h", fs::path(options.schedule_dir) / (name + ".schedule.h"),
                          fs::copy_options::overwrite_existing, ec);
        }
        // The key, as a symbol beside the kernel (checked by load()).
        {
            std::ofstream marker(dir / "key.c");
            marker << "const char convgrad_jit_key[] = \"";
            for (char c : text) marker << (c == '"' || c == '\\' ? "\\" : "") << c;
            marker << "\";\n";
        }
        // -Bsymbolic: the kernel's own Halide runtime binds to itself, never to another
        // runtime's symbols already in the process.
        const fs::path so = dir / "kernel.so";
        if (run_process({"cc", "-shared", "-Wl,-Bsymbolic", "-o", so.string(), (dir / "kernel.o").string(),
                         (dir / "key.c").string()},
                        log) != 0) {
            return Status::internal("jit: linking the kernel failed: " + read_text(log));
        }
        fs::path final_path = so;
        if (store) {
            std::error_code ec;
            fs::rename(so, entry, ec);  // atomic: readers see the old entry, none, or this one
            if (!ec) final_path = entry;
        }
        auto l = load(final_path, text, name);
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.compile_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return l;
    }

    Options options_;
    std::string cache_dir_;
    bool writable_ = false, writable_checked_ = false;
    std::mutex mutex_;
    std::map<std::string, Loaded> memory_;
    std::map<std::string, std::shared_ptr<std::mutex>> key_mutexes_;
    std::unordered_map<std::string, KernelFn> seen_;  // (variant, problem) -> the kernel served
    Stats stats_;
};

std::mutex g_mutex;
Jit *g_jit = nullptr;  // never freed: kernels it loaded may run until the process exits

}  // namespace

Status enable(const Options &options) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_jit == nullptr) {
        g_jit = new Jit(options);
    } else {
        g_jit->reconfigure(options);
    }
    set_jit_provider(g_jit);
    return Status::ok();
}

void disable() { set_jit_provider(nullptr); }

Stats stats() {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_jit ? g_jit->stats() : Stats{};
}

void clear_memory_cache() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_jit) g_jit->clear_memory();
}

std::string database_path(const std::string &given) {
    if (!given.empty()) return given;
    // Resolved once: every JIT call names its schedule through here, and the readlink and
    // stat cost ~10 us a call on this VM (a 50-us depthwise kernel ran 1.2x slower by JIT).
    static const std::string path = [] {
        std::error_code ec;
        const fs::path installed = fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "share" /
                                   "convgrad" / "schedules" / "tuned" / CONVGRAD_SCHEDULE_FAMILY ".json";
        if (!ec && fs::exists(installed)) return installed.string();
        return std::string(CONVGRAD_SOURCE_DIR "/schedules/tuned/" CONVGRAD_SCHEDULE_FAMILY ".json");
    }();
    return path;
}

std::string tuned_schedule(const std::string &variant, const std::string &database) {
    // Read once per path: the database changes only when `convgrad tune` rewrites it.
    static std::mutex mutex;
    static std::map<std::string, nlohmann::json> loaded;
    const std::string path = database_path(database);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = loaded.find(path);
    if (it == loaded.end()) {
        nlohmann::json j = nlohmann::json::object();
        std::ifstream f(path);
        if (f) j = nlohmann::json::parse(f, nullptr, false);
        if (j.is_discarded()) j = nlohmann::json::object();
        it = loaded.emplace(path, j).first;
    }
    const nlohmann::json &v = it->second;
    if (v.contains("variants") && v["variants"].contains(variant) && v["variants"][variant].contains("schedule")) {
        return v["variants"][variant]["schedule"].get<std::string>();
    }
    return "";
}

std::string generator_executable(const std::string &given) {
    if (!given.empty()) return given;
    if (const char *g = std::getenv("CONVGRAD_GENERATOR"); g && *g) return g;
    // Beside the running program first: an installed CLI uses the generator installed with it.
    std::error_code ec;
    const fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "convgrad_generators";
    if (!ec && fs::exists(beside)) return beside.string();
    if (fs::exists(CONVGRAD_BUILD_GENERATOR)) return CONVGRAD_BUILD_GENERATOR;
    return CONVGRAD_INSTALLED_GENERATOR;
}

}  // namespace convgrad::jit
