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
// Bytes past the end of every block: a guarded vector tail reads its last vector with masked
// loads (AVX2 vmaskmovps), and QEMU's emulation faults on the masked-off lanes when they
// cross into an unmapped page (hardware does not). The AVX2 ISA-path tests under qemu took
// a SIGSEGV in 5-20 % of runs, in the filter gradient's final pass reading a block whose
// last 28 bytes ended a page.
constexpr std::size_t kTailSlack = 64;
constexpr int kMinClass = 6;             // 64 bytes
constexpr int kMaxClass = 18;            // kCachedBlockMax
constexpr int kBlocksPerClass = 4;       // per thread: at most ~2 MB held per thread
// Larger blocks are the staged copies of whole activations and the filter-gradient's
// per-chunk sums, allocated and freed by the calling thread once per call, 1-30 MB each.
// Through malloc and free, glibc returned them to the system whenever the heap's free top
// passed its trim threshold (twice the largest block freed so far), and the next call took
// a page fault for every 4 KB of them: NCHW rx_g32_28's filter gradient, kernel alone, 1.6
// of 6.9 ms in malloc and free and its copies 2-3x slower (first touches), once its blocks
// added up to 15.0 MB, past twice the largest (7.4); at 14.4 MB, none. Whether a call paid
// that depended on sizes across the whole process, so it looked like noise. Each thread
// keeps its last kLargeBlocks freed ones (the call's own, held for the next call, as
// oneDNN holds its scratchpad) and hands out the smallest that fits.
constexpr int kLargeBlocks = 4;
static_assert((std::size_t(1) << kMaxClass) == kCachedBlockMax);

struct Header {
    void *system;  // what malloc returned
    int size_class;  // -1: larger than any class (a large block)
    std::size_t capacity;  // bytes usable from the pointer handed out
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
    void *large[kLargeBlocks] = {};  // freed large blocks, any capacity
    int large_count = 0;
    // Emptied, not just freed: a kernel_free on this thread after its destruction (a runtime
    // teardown at exit) then only parks a block, and no later kernel_malloc hands out one
    // already returned to the system.
    ~ThreadCache() {
        for (int c = kMinClass; c <= kMaxClass; c++) {
            for (int i = 0; i < count[c]; i++) std::free(header_of(blocks[c][i])->system);
            count[c] = 0;
        }
        for (int i = 0; i < large_count; i++) std::free(header_of(large[i])->system);
        large_count = 0;
    }
};

thread_local ThreadCache t_cache;

// Larger blocks (staged copies of whole activations) each start at the next of 16 offsets
// 64 bytes apart: glibc maps each at the same offset in its page, and two copies whose
// pixels are 1 KB apart (256 channels, channels innermost) then put their lines in the
// same 1/16 of the L2's sets, where one tile's lines of both outgrew the ways (NCHW
// rx_g32_28's filter gradient: transposed x and dy, always on the same offset).
constexpr std::size_t kColours = 16;
thread_local unsigned t_next_colour = 0;

// The index of the smallest cached large block of at least `bytes`; -1 if none.
int smallest_large(std::size_t bytes) {
    const ThreadCache &t = t_cache;
    int best = -1;
    for (int i = 0; i < t.large_count; i++) {
        const std::size_t cap = header_of(t.large[i])->capacity;
        if (cap >= bytes && (best < 0 || cap < header_of(t.large[best])->capacity)) best = i;
    }
    return best;
}

// Takes cached large block `i` out of the cache.
void *take_large(int i) {
    ThreadCache &t = t_cache;
    void *ptr = t.large[i];
    t.large[i] = t.large[--t.large_count];
    return ptr;
}

}  // namespace

void *kernel_malloc(void *, std::size_t bytes) {
    const int c = bytes <= kCachedBlockMax ? size_class(bytes) : -1;
    if (c >= 0 && t_cache.count[c] > 0) return t_cache.blocks[c][--t_cache.count[c]];
    if (c < 0) {
        if (const int i = smallest_large(bytes); i >= 0) return take_large(i);
    }
    const std::size_t capacity = c >= 0 ? (std::size_t(1) << c) : bytes;
    const std::size_t colour = c >= 0 ? 0 : kAlignment * (t_next_colour++ % kColours);
    void *system = std::malloc(capacity + sizeof(Header) + kAlignment + colour + kTailSlack);
    if (system == nullptr) return nullptr;
    const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(system) + sizeof(Header);
    void *ptr = reinterpret_cast<void *>((first + kAlignment - 1) / kAlignment * kAlignment + colour);
    *header_of(ptr) = Header{system, c, capacity};
    return ptr;
}

void kernel_free(void *, void *ptr) {
    if (ptr == nullptr) return;
    const Header h = *header_of(ptr);
    if (h.size_class >= 0 && t_cache.count[h.size_class] < kBlocksPerClass) {
        t_cache.blocks[h.size_class][t_cache.count[h.size_class]++] = ptr;
        return;
    }
    if (h.size_class < 0) {
        // Full: the smallest cached block makes room (the larger ones save more faults).
        ThreadCache &t = t_cache;
        if (t.large_count == kLargeBlocks) {
            const int smallest = smallest_large(0);
            if (header_of(t.large[smallest])->capacity > h.capacity) {
                std::free(h.system);
                return;
            }
            std::free(header_of(take_large(smallest))->system);
        }
        t.large[t.large_count++] = ptr;
        return;
    }
    std::free(h.system);
}

}  // namespace convgrad
