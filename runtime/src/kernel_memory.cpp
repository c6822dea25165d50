#include "kernel_memory.h"

#include <cstdint>
#include <cstdlib>

namespace convgrad {

namespace {

// Every block starts with a header of one alignment unit that records its size class, so
// a block freed on another thread (Halide's thread pool) goes to that thread's cache.
constexpr std::size_t kAlignment = 128;  // Halide asks for 64 (AVX-512 vectors); a cache pair
constexpr int kMinClass = 6;             // 64 bytes
constexpr int kMaxClass = 18;            // kCachedBlockMax
constexpr int kBlocksPerClass = 4;       // per thread: at most ~2 MB held per thread
static_assert((std::size_t(1) << kMaxClass) == kCachedBlockMax);

int size_class(std::size_t bytes) {
    int c = kMinClass;
    while ((std::size_t(1) << c) < bytes) c++;
    return c;
}

struct ThreadCache {
    void *blocks[kMaxClass + 1][kBlocksPerClass] = {};
    int count[kMaxClass + 1] = {};
    ~ThreadCache() {
        for (int c = kMinClass; c <= kMaxClass; c++) {
            for (int i = 0; i < count[c]; i++) std::free(blocks[c][i]);
        }
    }
};

thread_local ThreadCache t_cache;

}  // namespace

void *kernel_malloc(void *, std::size_t bytes) {
    const int c = bytes <= kCachedBlockMax ? size_class(bytes) : -1;
    void *base = nullptr;
    if (c >= 0 && t_cache.count[c] > 0) {
        base = t_cache.blocks[c][--t_cache.count[c]];
    } else {
        const std::size_t capacity = c >= 0 ? (std::size_t(1) << c) : bytes;
        // aligned_alloc wants a multiple of the alignment.
        const std::size_t total = (kAlignment + capacity + kAlignment - 1) / kAlignment * kAlignment;
        base = std::aligned_alloc(kAlignment, total);
        if (base == nullptr) return nullptr;
    }
    *static_cast<int *>(base) = c;
    return static_cast<char *>(base) + kAlignment;
}

void kernel_free(void *, void *ptr) {
    if (ptr == nullptr) return;
    void *base = static_cast<char *>(ptr) - kAlignment;
    const int c = *static_cast<int *>(base);
    if (c >= 0 && t_cache.count[c] < kBlocksPerClass) {
        t_cache.blocks[c][t_cache.count[c]++] = base;
        return;
    }
    std::free(base);
}

}  // namespace convgrad
