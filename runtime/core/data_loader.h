// DataLoader: where a program's bytes come from (file, mmap, memory).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"

namespace ember {

/// Bytes handed out by a DataLoader. Frees itself (if the loader needs it)
/// when destroyed; movable, not copyable.
class FreeableBuffer {
 public:
  using FreeFn = void (*)(void* context, void* data, size_t size);

  FreeableBuffer() = default;
  FreeableBuffer(const void* data, size_t size, FreeFn free_fn = nullptr,
                 void* free_context = nullptr)
      : data_(data), size_(size), free_fn_(free_fn), free_context_(free_context) {}
  FreeableBuffer(FreeableBuffer&& other) { *this = static_cast<FreeableBuffer&&>(other); }
  FreeableBuffer& operator=(FreeableBuffer&& other) {
    if (this != &other) {
      release();
      data_ = other.data_;
      size_ = other.size_;
      free_fn_ = other.free_fn_;
      free_context_ = other.free_context_;
      other.data_ = nullptr;
      other.size_ = 0;
      other.free_fn_ = nullptr;
    }
    return *this;
  }
  FreeableBuffer(const FreeableBuffer&) = delete;
  FreeableBuffer& operator=(const FreeableBuffer&) = delete;
  ~FreeableBuffer() { release(); }

  const void* data() const { return data_; }
  size_t size() const { return size_; }

  void release() {
    if (free_fn_ != nullptr && data_ != nullptr) {
      free_fn_(free_context_, const_cast<void*>(data_), size_);
    }
    data_ = nullptr;
    size_ = 0;
    free_fn_ = nullptr;
  }

 private:
  const void* data_ = nullptr;
  size_t size_ = 0;
  FreeFn free_fn_ = nullptr;
  void* free_context_ = nullptr;
};

class DataLoader {
 public:
  virtual ~DataLoader() = default;

  /// Loads `size` bytes at `offset`. Fails with OutOfRange when the range
  /// is not inside the data.
  [[nodiscard]] virtual Result<FreeableBuffer> load(size_t offset, size_t size) = 0;

  /// Total size of the data in bytes.
  [[nodiscard]] virtual Result<size_t> size() const = 0;

  /// A hint that nothing will read `[data, data + size)` (inside a buffer
  /// this loader returned) for a while: a loader that maps a file may drop
  /// those pages from memory. The bytes stay valid; reading them again
  /// reloads them. Only for pages that can be read back unchanged (an
  /// unmodified file mapping): a loader that decrypts or decompresses into
  /// memory must keep the default, which does nothing. The method loader
  /// calls it for constants only prepare steps read, per method: another
  /// method that reads one at execute just faults its pages back in.
  virtual void drop_pages(const void* data, size_t size) {
    (void)data;
    (void)size;
  }
};

/// Serves bytes from memory the caller keeps alive for the loader's lifetime.
class BufferDataLoader final : public DataLoader {
 public:
  BufferDataLoader(const void* data, size_t size)
      : data_(static_cast<const uint8_t*>(data)), size_(size) {}

  Result<FreeableBuffer> load(size_t offset, size_t size) override {
    EMBER_CHECK_OR_RETURN(offset <= size_ && size <= size_ - offset, Error::OutOfRange,
                          "buffer loader: range [%zu, +%zu) is outside the %zu-byte buffer",
                          offset, size, size_);
    return FreeableBuffer(data_ + offset, size);
  }
  Result<size_t> size() const override { return size_; }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace ember
