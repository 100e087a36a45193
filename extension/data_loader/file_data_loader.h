// FileDataLoader: reads ranges of a file into heap buffers with pread.
// MmapDataLoader: maps ranges of a file read-only (no copies).
// Both live in extension/ because they use the OS and the heap; the runtime
// core only sees the DataLoader interface.
#pragma once

#include <cstddef>

#include "runtime/core/data_loader.h"

namespace ember::extension {

class FileDataLoader final : public ember::DataLoader {
 public:
  /// Opens `path`; fails with AccessFailed naming the path and errno text.
  static Result<FileDataLoader> from(const char* path);
  FileDataLoader(FileDataLoader&& other);
  FileDataLoader& operator=(FileDataLoader&&) = delete;
  ~FileDataLoader() override;

  Result<FreeableBuffer> load(size_t offset, size_t size) override;
  Result<size_t> size() const override { return file_size_; }

 private:
  FileDataLoader(int fd, size_t file_size) : fd_(fd), file_size_(file_size) {}
  int fd_ = -1;
  size_t file_size_ = 0;
};

class MmapDataLoader final : public ember::DataLoader {
 public:
  static Result<MmapDataLoader> from(const char* path);
  MmapDataLoader(MmapDataLoader&& other);
  MmapDataLoader& operator=(MmapDataLoader&&) = delete;
  ~MmapDataLoader() override;

  Result<FreeableBuffer> load(size_t offset, size_t size) override;
  Result<size_t> size() const override { return file_size_; }
  /// madvise(MADV_DONTNEED) on the whole pages inside the range: they leave
  /// the process's memory and are read back from the file if touched.
  void drop_pages(const void* data, size_t size) override;

 private:
  MmapDataLoader(int fd, size_t file_size) : fd_(fd), file_size_(file_size) {}
  int fd_ = -1;
  size_t file_size_ = 0;
};

}  // namespace ember::extension
