// The program writer: a Program table plus data → `.pte` bytes.
//
// Layout: FlatBuffer (root offset, "ET12", then the 32-byte extended header
// "eh00" inserted after the identifier), padding, then segments, each aligned
// to `segment_alignment`. Constants go into one constant segment, each tensor
// aligned to `constant_alignment`; entry 0 of its offsets is reserved, and
// the constant_segment is written (offsets `[0]`) even without constants.
// Initial values of mutable buffers go into one more segment, laid out the
// same way and named by mutable_data_segments[0] (written only when a
// program has such buffers).
// Every vector and string is written present, empty or not (program_pack.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "schema/program_generated.h"

namespace ember::program {

struct WriterOptions {
  uint64_t segment_alignment = 128;
  uint64_t constant_alignment = 16;
  /// Delegate blobs of at most this many bytes stay inline in the FlatBuffer;
  /// larger ones go to their own segment.
  uint64_t max_inline_delegate_bytes = 0;
};

struct WriteResult {
  std::vector<uint8_t> bytes;
  std::string error;  // Empty on success.
  bool ok() const { return error.empty(); }
};

/// Writes `program` (its constant_segment and segments are replaced) with
/// `constants[i]` stored as constant data_buffer_idx i + 1,
/// `delegate_blobs[i]` as the processed data of delegates whose reference
/// index is i, and `named_blobs[i]` as the segment of the named_data entries
/// whose segment_index is i (each blob its own segment), and `mutable_data[i]`
/// as the initial value of planned tensors whose data_buffer_idx is i + 1.
WriteResult write_program(ember_fb::ProgramT program,
                          const std::vector<std::span<const uint8_t>>& constants,
                          const std::vector<std::span<const uint8_t>>& delegate_blobs,
                          const WriterOptions& options = {},
                          const std::vector<std::span<const uint8_t>>& named_blobs = {},
                          const std::vector<std::span<const uint8_t>>& mutable_data = {});

/// Same, from the Program in FlatBuffers JSON (field names of schema/program.fbs).
WriteResult write_program_from_json(
    const std::string& program_json, const std::vector<std::span<const uint8_t>>& constants,
    const std::vector<std::span<const uint8_t>>& delegate_blobs, const WriterOptions& options = {},
    const std::vector<std::span<const uint8_t>>& named_blobs = {},
    const std::vector<std::span<const uint8_t>>& mutable_data = {});

/// Same, written straight into the file at `path` (segments are streamed
/// from the callers' bytes, never copied whole: a program of gigabytes of
/// weights needs no second copy in memory). The error, or empty; on an error
/// the partial file is removed.
std::string write_program_file_from_json(
    const std::string& path, const std::string& program_json,
    const std::vector<std::span<const uint8_t>>& constants,
    const std::vector<std::span<const uint8_t>>& delegate_blobs, const WriterOptions& options = {},
    const std::vector<std::span<const uint8_t>>& named_blobs = {},
    const std::vector<std::span<const uint8_t>>& mutable_data = {});

/// The text of schema/program.fbs, compiled into the writer.
const char* program_schema_text();

}  // namespace ember::program
