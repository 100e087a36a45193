// MemoryAllocator: a bump allocator over memory the caller owns.
//
// Used for everything `load_method` creates (values, tensors, argument
// arrays). It never frees single allocations and never touches the heap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"

namespace ember {

class MemoryAllocator {
 public:
  MemoryAllocator(void* base, size_t size) : base_(static_cast<uint8_t*>(base)), size_(size) {}
  virtual ~MemoryAllocator() = default;

  /// Returns `size` bytes aligned to `alignment` (a power of two), or null
  /// (with the error message set) when the buffer is exhausted.
  virtual void* allocate(size_t size, size_t alignment = kDefaultAlignment);

  template <typename T>
  T* allocate_array(size_t count) {
    if (count > SIZE_MAX / sizeof(T)) return nullptr;
    return static_cast<T*>(allocate(count * sizeof(T), alignof(T) > kDefaultAlignment
                                                            ? alignof(T)
                                                            : kDefaultAlignment));
  }

  void reset() { used_ = 0; }
  size_t used() const { return used_; }
  size_t capacity() const { return size_; }

  static constexpr size_t kDefaultAlignment = alignof(std::max_align_t);

 private:
  uint8_t* base_;
  size_t size_;
  size_t used_ = 0;
};

}  // namespace ember
