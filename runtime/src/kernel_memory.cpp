#include "kernel_memory.h"

#include <cstdint>
#include <cstdlib>

namespace convgrad {

namespace {

// Each block carries a header just before the pointer handed out: the system allocation
// and its size class, so a block freed on another thread (Halide's thread pool) goes to that
// thread's cache. Blocks come from malloc, aligned within it, so they keep glibc's varied
// placement: with every block on the same offset in its page (aligned_alloc), the staged
// copies' loads aliased the output's stores (NHWC mb_dw32_112's data gradient 0.92x).
constexpr std::size_t kAlignment = 64;  // Halide asks for 64 (AVX-512 vectors)
constexpr int kMinClass = 6;             // 64 bytes
constexpr int kMaxClass = 18;            // kCachedBlockMax
constexpr int kBlocksPerClass = 4;       // per thread: at most ~2 MB held per thread
static_assert((std::size_t(1) << kMaxClass) == kCachedBlockMax);

struct Header {
    void *system;  // what malloc returned
    int size_class;  // -1: larger than any class, not cached
};

int size_class(std::size_t bytes) {
    int c = kMinClass;
    while ((std::size_t(1) << c) < bytes) c++;
    return c;
}

Header *header_of(void *ptr) { return static_cast<Header *>(ptr) - 1; }

struct ThreadCache {
    void *blocks[kMaxClass + 1][kBlocksPerClass] = {};
    int count[kMaxClass + 1] = {};
    // Emptied, not just freed: a kernel_free on this thread after its destruction (a runtime
    // teardown at exit) then only parks a block, and no later kernel_malloc hands out one
    // already returned to the system.
    ~ThreadCache() {
        for (int c = kMinClass; c <= kMaxClass; c++) {
            for (int i = 0; i < count[c]; i++) std::free(header_of(blocks[c][i])->system);
            count[c] = 0;
        }
    }
};

thread_local ThreadCache t_cache;

}  // namespace

void *kernel_malloc(void *, std::size_t bytes) {
    const int c = bytes <= kCachedBlockMax ? size_class(bytes) : -1;
    if (c >= 0 && t_cache.count[c] > 0) return t_cache.blocks[c][--t_cache.count[c]];
    const std::size_t capacity = c >= 0 ? (std::size_t(1) << c) : bytes;
    void *system = std::malloc(capacity + sizeof(Header) + kAlignment);
    if (system == nullptr) return nullptr;
    const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(system) + sizeof(Header);
    void *ptr = reinterpret_cast<void *>((first + kAlignment - 1) / kAlignment * kAlignment);
    *header_of(ptr) = Header{system, c};
    return ptr;
}

void kernel_free(void *, void *ptr) {
    if (ptr == nullptr) return;
    const Header h = *header_of(ptr);
    if (h.size_class >= 0 && t_cache.count[h.size_class] < kBlocksPerClass) {
        t_cache.blocks[h.size_class][t_cache.count[h.size_class]++] = ptr;
        return;
    }
    std::free(h.system);
}

}  // namespace convgrad
