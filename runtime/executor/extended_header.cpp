#include "runtime/executor/extended_header.h"

#include <cstring>

namespace ember {
namespace {
uint32_t read_u32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t read_u64(const uint8_t* p) {
  return uint64_t{read_u32(p)} | (uint64_t{read_u32(p + 4)} << 32);
}
}  // namespace

Result<ExtendedHeader> ExtendedHeader::parse(const void* data, size_t size, const char* magic) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < kOffset + kMagicSize + 4 || std::memcmp(bytes + kOffset, magic, kMagicSize) != 0) {
    return Error::NotFound;
  }
  const uint32_t length = read_u32(bytes + kOffset + 4);
  EMBER_CHECK_OR_RETURN(length >= kMinLength, Error::InvalidProgram,
                        "extended header: length %u is shorter than the minimum %u", length,
                        kMinLength);
  EMBER_CHECK_OR_RETURN(size >= kOffset + kMinLength, Error::InvalidProgram,
                        "extended header: file too short (%zu bytes) to hold the header", size);
  ExtendedHeader header;
  header.program_size = read_u64(bytes + kOffset + 8);
  header.segment_base_offset = read_u64(bytes + kOffset + 16);
  if (length >= 32 && size >= kOffset + 32) {
    header.segment_data_size = read_u64(bytes + kOffset + 24);
  }
  return header;
}

}  // namespace ember
