#include "extension/data_loader/file_data_loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ember::extension {
namespace {

Result<int> open_file(const char* path, size_t* file_size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  EMBER_CHECK_OR_RETURN(fd >= 0, Error::AccessFailed, "cannot open '%s': %s", path,
                        std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return set_error(Error::AccessFailed, "'%s' is not a regular file", path);
  }
  *file_size = static_cast<size_t>(st.st_size);
  return fd;
}

Error check_range(size_t offset, size_t size, size_t file_size) {
  EMBER_CHECK_OR_RETURN(offset <= file_size && size <= file_size - offset, Error::OutOfRange,
                        "file loader: range [%zu, +%zu) is outside the %zu-byte file", offset,
                        size, file_size);
  return Error::Ok;
}

void free_heap(void*, void* data, size_t) { std::free(data); }

struct MmapRegion {
  void* base;
  size_t length;
};

void unmap(void* context, void*, size_t) {
  // The context remembers the page-aligned mapping behind the handed-out range.
  auto* region = static_cast<MmapRegion*>(context);
  ::munmap(region->base, region->length);
  std::free(region);
}

}  // namespace

Result<FileDataLoader> FileDataLoader::from(const char* path) {
  size_t file_size = 0;
  Result<int> fd = open_file(path, &file_size);
  if (!fd.ok()) return fd.error();
  return FileDataLoader(fd.get(), file_size);
}

FileDataLoader::FileDataLoader(FileDataLoader&& other)
    : fd_(other.fd_), file_size_(other.file_size_) {
  other.fd_ = -1;
}

FileDataLoader::~FileDataLoader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FreeableBuffer> FileDataLoader::load(size_t offset, size_t size) {
  EMBER_TRY(check_range(offset, size, file_size_));
  if (size == 0) return FreeableBuffer(nullptr, 0);
  // 64-byte alignment keeps every 16-aligned constant in the file aligned in memory.
  void* buf = std::aligned_alloc(64, (size + 63) & ~size_t{63});
  EMBER_CHECK_OR_RETURN(buf != nullptr, Error::MemoryAllocationFailed,
                        "file loader: cannot allocate %zu bytes", size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, static_cast<char*>(buf) + done, size - done,
                              static_cast<off_t>(offset + done));
    if (n <= 0) {
      std::free(buf);
      return set_error(Error::AccessFailed, "file loader: read failed at offset %zu: %s",
                       offset + done, n == 0 ? "unexpected end of file" : std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return FreeableBuffer(buf, size, free_heap, nullptr);
}

Result<MmapDataLoader> MmapDataLoader::from(const char* path) {
  size_t file_size = 0;
  Result<int> fd = open_file(path, &file_size);
  if (!fd.ok()) return fd.error();
  return MmapDataLoader(fd.get(), file_size);
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other)
    : fd_(other.fd_), file_size_(other.file_size_) {
  other.fd_ = -1;
}

MmapDataLoader::~MmapDataLoader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FreeableBuffer> MmapDataLoader::load(size_t offset, size_t size) {
  EMBER_TRY(check_range(offset, size, file_size_));
  if (size == 0) return FreeableBuffer(nullptr, 0);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t map_offset = offset & ~(page - 1);
  const size_t length = size + (offset - map_offset);
  void* base = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd_, static_cast<off_t>(map_offset));
  EMBER_CHECK_OR_RETURN(base != MAP_FAILED, Error::AccessFailed,
                        "mmap of %zu bytes at offset %zu failed: %s", length, map_offset,
                        std::strerror(errno));
  auto* region = static_cast<MmapRegion*>(std::malloc(sizeof(MmapRegion)));
  if (region == nullptr) {
    ::munmap(base, length);
    return set_error(Error::MemoryAllocationFailed, "mmap loader: out of memory");
  }
  *region = {base, length};
  return FreeableBuffer(static_cast<const char*>(base) + (offset - map_offset), size, unmap,
                        region);
}

void MmapDataLoader::drop_pages(const void* data, size_t size) {
  // Only whole pages: the edges may hold bytes something still reads. The
  // mapping is private and read-only, so a dropped page is re-read from the
  // file, never lost.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace ember::extension
