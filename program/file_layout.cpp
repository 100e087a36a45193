#include "program/file_layout.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace ember::program {
namespace {

constexpr size_t kHeaderOffset = 8;
constexpr uint32_t kHeaderLength = 32;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

std::vector<uint64_t> segment_offsets(const std::vector<std::vector<uint8_t>>& segments,
                                      uint64_t alignment) {
  std::vector<uint64_t> offsets;
  uint64_t offset = 0;
  for (const auto& data : segments) {
    offsets.push_back(offset);
    offset = align_up(offset + data.size(), alignment);
  }
  return offsets;
}

std::vector<uint64_t> segment_offsets(const std::vector<SegmentView>& segments,
                                      uint64_t alignment) {
  std::vector<uint64_t> offsets;
  uint64_t offset = 0;
  for (const auto& segment : segments) {
    offsets.push_back(offset);
    offset = align_up(offset + segment.size, alignment);
  }
  return offsets;
}

namespace {

bool write_zeros(const ByteSink& sink, uint64_t count) {
  static constexpr uint8_t kZeros[4096] = {};
  while (count > 0) {
    const size_t n = count < sizeof(kZeros) ? static_cast<size_t>(count) : sizeof(kZeros);
    if (!sink(kZeros, n)) return false;
    count -= n;
  }
  return true;
}

}  // namespace

bool write_file_layout(const uint8_t* fb, size_t fb_size, const char* magic,
                       const std::vector<SegmentView>& segments,
                       const std::vector<uint64_t>& offsets, uint64_t alignment,
                       const ByteSink& sink) {
  // Only the root offset points across the insertion point, so it alone
  // moves; 32 bytes keep every 16-byte alignment inside the FlatBuffer.
  const uint64_t flatbuffer_size = fb_size + kHeaderLength;
  const uint64_t segment_base = segments.empty() ? 0 : align_up(flatbuffer_size, alignment);
  const uint64_t segment_bytes = segments.empty() ? 0 : offsets.back() + segments.back().size;
  uint8_t head[kHeaderOffset + kHeaderLength] = {};
  std::memcpy(head, fb, kHeaderOffset);
  uint32_t root = 0;
  std::memcpy(&root, head, 4);
  put_u32(head, root + kHeaderLength);
  uint8_t* header = head + kHeaderOffset;
  std::memcpy(header, magic, 4);
  put_u32(header + 4, kHeaderLength);
  put_u64(header + 8, flatbuffer_size);
  put_u64(header + 16, segment_base);
  put_u64(header + 24, segment_bytes);
  if (!sink(head, sizeof(head)) || !sink(fb + kHeaderOffset, fb_size - kHeaderOffset)) {
    return false;
  }
  uint64_t at = flatbuffer_size;  // bytes written so far
  for (size_t i = 0; i < segments.size(); ++i) {
    for (const auto& piece : segments[i].pieces) {
      const uint64_t start = segment_base + offsets[i] + piece.offset;
      if (!write_zeros(sink, start - at)) return false;
      if (!piece.data.empty() && !sink(piece.data.data(), piece.data.size())) return false;
      at = start + piece.data.size();
    }
    const uint64_t end = segment_base + offsets[i] + segments[i].size;
    if (!write_zeros(sink, end - at)) return false;
    at = end;
  }
  return true;
}

std::string write_to_file(const std::string& path,
                          const std::function<std::string(const ByteSink&)>& write) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return "cannot open " + path + " for writing: " + std::strerror(errno);
  int write_errno = 0;  // set when a write fails (disk full, ...)
  std::string error = write([f, &write_errno](const uint8_t* data, size_t size) {
    if (std::fwrite(data, 1, size, f) == size) return true;
    write_errno = errno != 0 ? errno : EIO;
    return false;
  });
  if (write_errno != 0) error = "writing " + path + " failed: " + std::strerror(write_errno);
  if (std::fclose(f) != 0 && error.empty()) {
    error = "closing " + path + " failed: " + std::strerror(errno);
  }
  std::error_code ec;
  if (!error.empty() && std::filesystem::is_regular_file(path, ec)) std::remove(path.c_str());
  return error;
}

std::vector<uint8_t> lay_out_file(const uint8_t* fb, size_t fb_size, const char* magic,
                                  const std::vector<std::vector<uint8_t>>& segments,
                                  const std::vector<uint64_t>& offsets, uint64_t alignment) {
  std::vector<SegmentView> views(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    views[i].size = segments[i].size();
    views[i].pieces.push_back({0, segments[i]});
  }
  std::vector<uint8_t> out;
  const uint64_t fb_total = fb_size + kHeaderLength;
  out.reserve(segments.empty() ? fb_total
                               : align_up(fb_total, alignment) + offsets.back() +
                                     segments.back().size());
  write_file_layout(fb, fb_size, magic, views, offsets, alignment,
                    [&out](const uint8_t* data, size_t size) {
                      out.insert(out.end(), data, data + size);
                      return true;
                    });
  return out;
}

}  // namespace ember::program
