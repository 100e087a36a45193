#include "program/file_layout.h"

#include <cstring>

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

std::vector<uint8_t> lay_out_file(const uint8_t* fb, size_t fb_size, const char* magic,
                                  const std::vector<std::vector<uint8_t>>& segments,
                                  const std::vector<uint64_t>& offsets, uint64_t alignment) {
  // Only the root offset points across the insertion point, so it alone
  // moves; 32 bytes keep every 16-byte alignment inside the FlatBuffer.
  const uint64_t flatbuffer_size = fb_size + kHeaderLength;
  const uint64_t segment_base = segments.empty() ? 0 : align_up(flatbuffer_size, alignment);
  const uint64_t segment_bytes = segments.empty() ? 0 : offsets.back() + segments.back().size();
  std::vector<uint8_t> out(flatbuffer_size, 0);
  out.reserve(segment_base + segment_bytes);
  std::memcpy(out.data(), fb, kHeaderOffset);
  std::memcpy(out.data() + kHeaderOffset + kHeaderLength, fb + kHeaderOffset,
              fb_size - kHeaderOffset);
  uint32_t root = 0;
  std::memcpy(&root, out.data(), 4);
  put_u32(out.data(), root + kHeaderLength);
  uint8_t* header = out.data() + kHeaderOffset;
  std::memcpy(header, magic, 4);
  put_u32(header + 4, kHeaderLength);
  put_u64(header + 8, flatbuffer_size);
  put_u64(header + 16, segment_base);
  put_u64(header + 24, segment_bytes);
  if (!segments.empty()) {
    out.resize(segment_base + segment_bytes, 0);
    for (size_t i = 0; i < segments.size(); ++i) {
      if (!segments[i].empty()) {
        std::memcpy(out.data() + segment_base + offsets[i], segments[i].data(), segments[i].size());
      }
    }
  }
  return out;
}

}  // namespace ember::program
