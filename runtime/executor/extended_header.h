// The optional extended header after the file identifier ("eh00").
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"

namespace ember {

struct ExtendedHeader {
  static constexpr size_t kOffset = 8;
  static constexpr size_t kMagicSize = 4;
  static constexpr char kMagic[kMagicSize + 1] = "eh00";
  /// Bytes a reader loads to find the header.
  static constexpr size_t kReadSize = 64;
  /// Length this writer emits.
  static constexpr uint32_t kLength = 32;
  /// Shortest length a reader accepts (older files lack segment_data_size).
  static constexpr uint32_t kMinLength = 24;

  uint64_t program_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;

  /// Parses the header from the first bytes of a file. NotFound when the
  /// magic is absent (a file without header); InvalidProgram when present
  /// but malformed.
  /// `magic`: "eh00" in a program, "FH01" in a named-data file (`.ptd`).
  static Result<ExtendedHeader> parse(const void* data, size_t size, const char* magic = kMagic);
};

}  // namespace ember
