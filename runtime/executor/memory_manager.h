// MemoryManager: the memory a method may use, all of it owned by the caller.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/core/memory_allocator.h"

namespace ember {

class MemoryManager {
 public:
  /// `method_allocator` holds what `load_method` builds (values, tensor
  /// metadata, argument arrays). `planned_buffers[i]` backs the program's
  /// planned buffer `i + 1` (buffer 0 is reserved by the format) and must be
  /// at least as large as the method's `planned_buffer_size(i)`. Both must
  /// outlive the method.
  MemoryManager(MemoryAllocator* method_allocator, std::span<std::span<uint8_t>> planned_buffers)
      : method_allocator_(method_allocator), planned_buffers_(planned_buffers) {}

  MemoryAllocator* method_allocator() const { return method_allocator_; }
  std::span<std::span<uint8_t>> planned_buffers() const { return planned_buffers_; }

 private:
  MemoryAllocator* method_allocator_;
  std::span<std::span<uint8_t>> planned_buffers_;
};

}  // namespace ember
