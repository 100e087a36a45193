// The file layout a program (`.pte`) and a named-data file (`.ptd`) share:
// the FlatBuffer's root offset and identifier, a 32-byte extended header
// inserted after the identifier ("eh00" / "FH01": header length, FlatBuffer
// size, segment base offset, segment data size), the rest of the FlatBuffer,
// then the segments, each aligned to the segment alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ember::program {

/// A segment's bytes without copying them: `pieces` at offsets inside the
/// segment (increasing, not overlapping; gaps are zero), `size` in all.
struct SegmentView {
  struct Piece {
    uint64_t offset = 0;
    std::span<const uint8_t> data;
  };
  uint64_t size = 0;
  std::vector<Piece> pieces;
};

/// Receives the file's bytes in order; false stops the writing (an I/O error).
using ByteSink = std::function<bool(const uint8_t* data, size_t size)>;

/// Offsets of `segments` relative to the first one's start, each aligned.
std::vector<uint64_t> segment_offsets(const std::vector<SegmentView>& segments,
                                      uint64_t alignment);

/// The file, as lay_out_file below, written piece by piece into `sink` (so a
/// program of gigabytes of weights is never copied whole); false when the
/// sink refused a write.
bool write_file_layout(const uint8_t* flatbuffer, size_t size, const char* magic,
                       const std::vector<SegmentView>& segments,
                       const std::vector<uint64_t>& offsets, uint64_t alignment,
                       const ByteSink& sink);

/// Offsets of `segments` relative to the first one's start, each aligned.
std::vector<uint64_t> segment_offsets(const std::vector<std::vector<uint8_t>>& segments,
                                      uint64_t alignment);

/// Opens `path` for writing, calls `write` with a sink into it and closes
/// it. The error (`write`'s, or one naming the path and the system's reason
/// when opening, a write or closing fails), or empty. On an error a partial
/// regular file is removed (never a device or pipe the caller named).
std::string write_to_file(const std::string& path,
                          const std::function<std::string(const ByteSink&)>& write);

/// The file: `flatbuffer` (finished with its identifier) with the extended
/// header `magic` inserted, then `segments` at `offsets` past the segment base.
std::vector<uint8_t> lay_out_file(const uint8_t* flatbuffer, size_t size, const char* magic,
                                  const std::vector<std::vector<uint8_t>>& segments,
                                  const std::vector<uint64_t>& offsets, uint64_t alignment);

}  // namespace ember::program
