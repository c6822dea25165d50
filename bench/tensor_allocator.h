// Tensors aligned as frameworks allocate them (TensorFlow, PyTorch and oneDNN: 64 bytes), so
// kernels see in the benchmark and the tests the alignment they get in use. glibc's malloc
// puts a large block 16 bytes into its pages, where no 32- or 64-byte vector is aligned and
// the data gradients' streaming stores (generators/streaming_stores.h) fall back to plain ones.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace convgrad {

template<typename T>
struct TensorAllocator {
    using value_type = T;
    static constexpr std::align_val_t kAlignment{64};
    TensorAllocator() = default;
    template<typename U>
    TensorAllocator(const TensorAllocator<U> &) {}
    T *allocate(std::size_t n) { return static_cast<T *>(::operator new(n * sizeof(T), kAlignment)); }
    void deallocate(T *p, std::size_t) { ::operator delete(p, kAlignment); }
    template<typename U>
    bool operator==(const TensorAllocator<U> &) const { return true; }
    template<typename U>
    bool operator!=(const TensorAllocator<U> &) const { return false; }
};

using TensorBytes = std::vector<unsigned char, TensorAllocator<unsigned char>>;

}  // namespace convgrad
