// The kernels' scratch allocator (runtime/src/kernel_memory.h): aligned, live blocks apart,
// freed blocks served again (large ones too, kept for the next call), and frees from
// another thread.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "kernel_memory.h"

namespace convgrad {
namespace {

constexpr std::uintptr_t kHalideAlignment = 64;  // AVX-512 vectors

TEST(KernelMemory, AlignedAndWritableAtEverySize) {
    for (std::size_t bytes : {std::size_t(1), std::size_t(63), std::size_t(64), std::size_t(1000), std::size_t(5184),
                              kCachedBlockMax - 1, kCachedBlockMax, kCachedBlockMax + 1, std::size_t(3) << 20}) {
        auto *p = static_cast<unsigned char *>(kernel_malloc(nullptr, bytes));
        ASSERT_NE(p, nullptr) << bytes;
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kHalideAlignment, 0u) << bytes;
        std::memset(p, 0xA5, bytes);
        EXPECT_EQ(p[bytes - 1], 0xA5);
        kernel_free(nullptr, p);
    }
    kernel_free(nullptr, nullptr);  // as free(): nothing
}

TEST(KernelMemory, LiveBlocksDoNotOverlap) {
    // More live blocks of one size class than a thread keeps, then again from the cache.
    for (int round = 0; round < 2; round++) {
        std::vector<int *> blocks;
        for (int b = 0; b < 12; b++) {
            blocks.push_back(static_cast<int *>(kernel_malloc(nullptr, 3000 * sizeof(int))));
            for (int i = 0; i < 3000; i++) blocks.back()[i] = b * 3000 + i;
        }
        for (int b = 0; b < 12; b++) {
            for (int i = 0; i < 3000; i += 97) ASSERT_EQ(blocks[b][i], b * 3000 + i) << "block " << b;
        }
        EXPECT_EQ(std::set<int *>(blocks.begin(), blocks.end()).size(), blocks.size());
        for (int *p : blocks) kernel_free(nullptr, p);
    }
}

TEST(KernelMemory, FreedBlockIsServedAgain) {
    void *a = kernel_malloc(nullptr, 5184);
    kernel_free(nullptr, a);
    void *b = kernel_malloc(nullptr, 5000);  // the same size class
    EXPECT_EQ(a, b);
    kernel_free(nullptr, b);
}

// (On a thread of its own, whose cache is empty: the main thread's holds the blocks of
// whatever ran before, e.g. the dilation phases' dws, which filled this size class when the
// whole test binary ran in one process.)
void block_freed_on_another_thread() {
    void *a = nullptr;
    std::thread([&] { a = kernel_malloc(nullptr, 100000); }).join();
    ASSERT_NE(a, nullptr);
    std::memset(a, 1, 100000);
    kernel_free(nullptr, a);  // into this thread's cache
    void *b = kernel_malloc(nullptr, 100000);
    EXPECT_EQ(a, b);
    kernel_free(nullptr, b);
    // And the other way: a block of this thread freed on a thread that then exits.
    void *c = kernel_malloc(nullptr, 700);
    std::thread([c] { kernel_free(nullptr, c); }).join();
}

TEST(KernelMemory, BlockFreedOnAnotherThread) { std::thread(block_freed_on_another_thread).join(); }

// Large blocks (staged activations) are kept per thread for the next call: the same sizes
// again get the same blocks, live ones never overlap, a smaller request takes the smallest
// cached block that fits, and consecutive blocks start at different offsets within 1 KB.
// (On a thread of its own: this one's cache holds blocks of whatever ran before.)
void large_blocks_served_again() {
    const std::size_t sizes[] = {std::size_t(7) << 20, std::size_t(6) << 20, kCachedBlockMax * 3};
    std::vector<unsigned char *> first;
    for (std::size_t bytes : sizes) {
        first.push_back(static_cast<unsigned char *>(kernel_malloc(nullptr, bytes)));
        ASSERT_NE(first.back(), nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first.back()) % kHalideAlignment, 0u);
        std::memset(first.back(), static_cast<int>(first.size()), bytes);
    }
    for (size_t i = 0; i < first.size(); i++) {
        EXPECT_EQ(first[i][sizes[i] - 1], static_cast<unsigned char>(i + 1)) << "block " << i;
    }
    EXPECT_NE(reinterpret_cast<std::uintptr_t>(first[0]) % 1024, reinterpret_cast<std::uintptr_t>(first[1]) % 1024);
    for (unsigned char *p : first) kernel_free(nullptr, p);
    std::vector<void *> again;
    for (std::size_t bytes : sizes) again.push_back(kernel_malloc(nullptr, bytes));
    EXPECT_EQ(std::set<void *>(again.begin(), again.end()), std::set<void *>(first.begin(), first.end()));
    for (void *p : again) kernel_free(nullptr, p);
    void *small = kernel_malloc(nullptr, kCachedBlockMax * 2);  // the 0.75 MB block fits
    EXPECT_EQ(small, first[2]);
    void *big = kernel_malloc(nullptr, std::size_t(8) << 20);  // none fits: a new one
    EXPECT_EQ(std::set<void *>(first.begin(), first.end()).count(big), 0u);
    kernel_free(nullptr, small);
    kernel_free(nullptr, big);
}

TEST(KernelMemory, LargeBlocksServedAgain) { std::thread(large_blocks_served_again).join(); }

}  // namespace
}  // namespace convgrad
