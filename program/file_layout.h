// The file layout a program (`.pte`) and a named-data file (`.ptd`) share:
// the FlatBuffer's root offset and identifier, a 32-byte extended header
// inserted after the identifier ("eh00" / "FH01": header length, FlatBuffer
// size, segment base offset, segment data size), the rest of the FlatBuffer,
// then the segments, each aligned to the segment alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::program {

/// Offsets of `segments` relative to the first one's start, each aligned.
std::vector<uint64_t> segment_offsets(const std::vector<std::vector<uint8_t>>& segments,
                                      uint64_t alignment);

/// The file: `flatbuffer` (finished with its identifier) with the extended
/// header `magic` inserted, then `segments` at `offsets` past the segment base.
std::vector<uint8_t> lay_out_file(const uint8_t* flatbuffer, size_t size, const char* magic,
                                  const std::vector<std::vector<uint8_t>>& segments,
                                  const std::vector<uint64_t>& offsets, uint64_t alignment);

}  // namespace ember::program
