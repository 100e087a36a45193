#include "runtime/core/memory_allocator.h"

namespace ember {

void* MemoryAllocator::allocate(size_t size, size_t alignment) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(base_) + used_;
  const uintptr_t aligned = (start + alignment - 1) & ~(uintptr_t{alignment} - 1);
  const size_t pad = aligned - start;
  if (pad > size_ - used_ || size > size_ - used_ - pad) {
    (void)set_error(Error::MemoryAllocationFailed,
              "method allocator: %zu bytes requested, %zu of %zu left", size, size_ - used_,
              size_);
    return nullptr;
  }
  used_ += pad + size;
  return reinterpret_cast<void*>(aligned);
}

}  // namespace ember
