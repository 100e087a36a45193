#include "program/program_writer.h"

#include <flatbuffers/idl.h>

#include <cstring>

#include "generated_program_schema_text.h"
#include "program/file_layout.h"
#include "program/program_pack.h"

namespace ember::program {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

const char* program_schema_text() { return kProgramSchemaText; }

namespace {

// The program's file into `sink`; the error, or empty. Segments refer to the
// callers' bytes (constants, blobs): nothing is copied but the FlatBuffer.
std::string write_program_to(ember_fb::ProgramT program,
                             const std::vector<std::span<const uint8_t>>& constants,
                             const std::vector<std::span<const uint8_t>>& delegate_blobs,
                             const WriterOptions& options,
                             const std::vector<std::span<const uint8_t>>& named_blobs,
                             const std::vector<std::span<const uint8_t>>& mutable_data,
                             const ByteSink& sink) {
  if (options.segment_alignment == 0 || options.constant_alignment == 0) {
    return "alignments must be positive";
  }
  // Segment payloads in file order; offsets are relative to the segment base.
  std::vector<SegmentView> segment_data;
  program.segments.clear();
  program.constant_segment.reset();
  program.constant_buffer.clear();

  // Tensors' data in one segment, each aligned, entry 0 of the offsets
  // reserved (data_buffer_idx 0 means "no data").
  auto subsegment = [&](const std::vector<std::span<const uint8_t>>& blobs) {
    auto offsets = std::make_unique<ember_fb::SubsegmentOffsetsT>();
    offsets->offsets.push_back(0);
    if (!blobs.empty()) {
      SegmentView data;
      for (const auto& c : blobs) {
        const uint64_t offset = align_up(data.size, options.constant_alignment);
        offsets->offsets.push_back(offset);
        data.pieces.push_back({offset, c});
        data.size = offset + c.size();
      }
      offsets->segment_index = static_cast<uint32_t>(segment_data.size());
      segment_data.push_back(std::move(data));
    }
    return offsets;
  };
  // Always written, with the reserved entry 0: readers without the deprecated
  // constant_buffer path refuse a program that has no constant_segment. With
  // no constants there is no segment to name; index 0 and offsets [0] say so.
  program.constant_segment = subsegment(constants);
  program.mutable_data_segments.clear();
  if (!mutable_data.empty()) program.mutable_data_segments.push_back(subsegment(mutable_data));

  // Delegate blobs: inline when small, otherwise one segment each.
  program.backend_delegate_data.clear();
  std::vector<ember_fb::DataLocation> blob_location(delegate_blobs.size());
  std::vector<uint32_t> blob_index(delegate_blobs.size());
  for (size_t i = 0; i < delegate_blobs.size(); ++i) {
    const auto& blob = delegate_blobs[i];
    if (blob.size() <= options.max_inline_delegate_bytes) {
      auto inline_data = std::make_unique<ember_fb::BackendDelegateInlineDataT>();
      inline_data->data.assign(blob.begin(), blob.end());
      blob_location[i] = ember_fb::DataLocation::INLINE;
      blob_index[i] = static_cast<uint32_t>(program.backend_delegate_data.size());
      program.backend_delegate_data.push_back(std::move(inline_data));
    } else {
      blob_location[i] = ember_fb::DataLocation::SEGMENT;
      blob_index[i] = static_cast<uint32_t>(segment_data.size());
      segment_data.push_back({blob.size(), {{0, blob}}});
    }
  }
  for (auto& plan : program.execution_plan) {
    for (auto& delegate : plan->delegates) {
      if (!delegate->processed) continue;
      const uint32_t i = delegate->processed->index;
      if (i >= delegate_blobs.size()) {
        return "delegate '" + delegate->id + "' refers to blob " + std::to_string(i) +
               " but only " + std::to_string(delegate_blobs.size()) + " were given";
      }
      delegate->processed->location = blob_location[i];
      delegate->processed->index = blob_index[i];
    }
  }

  // Named data: one segment per blob, shared by the entries naming it.
  std::vector<uint32_t> named_segment(named_blobs.size());
  for (size_t i = 0; i < named_blobs.size(); ++i) {
    named_segment[i] = static_cast<uint32_t>(segment_data.size());
    segment_data.push_back({named_blobs[i].size(), {{0, named_blobs[i]}}});
  }
  for (auto& entry : program.named_data) {
    if (entry->segment_index >= named_blobs.size()) {
      return "named data '" + entry->key + "' refers to blob " +
             std::to_string(entry->segment_index) + " but only " +
             std::to_string(named_blobs.size()) + " were given";
    }
    entry->segment_index = named_segment[entry->segment_index];
  }

  const std::vector<uint64_t> offsets = segment_offsets(segment_data, options.segment_alignment);
  for (size_t i = 0; i < segment_data.size(); ++i) {
    auto seg = std::make_unique<ember_fb::DataSegmentT>();
    seg->offset = offsets[i];
    seg->size = segment_data[i].size;
    program.segments.push_back(std::move(seg));
  }

  flatbuffers::FlatBufferBuilder fbb(1024);
  fbb.Finish(pack_program(fbb, program), ember_fb::ProgramIdentifier());
  if (!write_file_layout(fbb.GetBufferPointer(), fbb.GetSize(), "eh00", segment_data, offsets,
                         options.segment_alignment, sink)) {
    return "writing the program failed";
  }
  return {};
}

// The Program in FlatBuffers JSON, parsed and verified; the error or empty.
std::string parse_program_json(const std::string& program_json, ember_fb::ProgramT* program) {
  flatbuffers::IDLOptions idl_options;
  idl_options.strict_json = false;
  flatbuffers::Parser parser(idl_options);
  if (!parser.Parse(kProgramSchemaText)) {
    return "internal: schema does not parse: " + parser.error_;
  }
  if (!parser.Parse(program_json.c_str())) {
    return "program JSON does not match the schema: " + parser.error_;
  }
  const uint8_t* buf = parser.builder_.GetBufferPointer();
  flatbuffers::Verifier verifier(buf, parser.builder_.GetSize());
  if (!ember_fb::VerifyProgramBuffer(verifier)) {
    return "internal: the parsed program does not verify";
  }
  ember_fb::GetProgram(buf)->UnPackTo(program);
  return {};
}

}  // namespace

WriteResult write_program(ember_fb::ProgramT program,
                          const std::vector<std::span<const uint8_t>>& constants,
                          const std::vector<std::span<const uint8_t>>& delegate_blobs,
                          const WriterOptions& options,
                          const std::vector<std::span<const uint8_t>>& named_blobs,
                          const std::vector<std::span<const uint8_t>>& mutable_data) {
  WriteResult result;
  result.error = write_program_to(std::move(program), constants, delegate_blobs, options,
                                  named_blobs, mutable_data,
                                  [&result](const uint8_t* data, size_t size) {
                                    result.bytes.insert(result.bytes.end(), data, data + size);
                                    return true;
                                  });
  if (!result.ok()) result.bytes.clear();
  return result;
}



WriteResult write_program_from_json(
    const std::string& program_json, const std::vector<std::span<const uint8_t>>& constants,
    const std::vector<std::span<const uint8_t>>& delegate_blobs, const WriterOptions& options,
    const std::vector<std::span<const uint8_t>>& named_blobs,
    const std::vector<std::span<const uint8_t>>& mutable_data) {
  ember_fb::ProgramT program;
  if (std::string error = parse_program_json(program_json, &program); !error.empty()) {
    WriteResult result;
    result.error = std::move(error);
    return result;
  }
  return write_program(std::move(program), constants, delegate_blobs, options, named_blobs,
                       mutable_data);
}

std::string write_program_file_from_json(
    const std::string& path, const std::string& program_json,
    const std::vector<std::span<const uint8_t>>& constants,
    const std::vector<std::span<const uint8_t>>& delegate_blobs, const WriterOptions& options,
    const std::vector<std::span<const uint8_t>>& named_blobs,
    const std::vector<std::span<const uint8_t>>& mutable_data) {
  ember_fb::ProgramT program;
  if (std::string error = parse_program_json(program_json, &program); !error.empty()) {
    return error;
  }
  return write_to_file(path, [&](const ByteSink& sink) {
    return write_program_to(std::move(program), constants, delegate_blobs, options, named_blobs,
                            mutable_data, sink);
  });
}

}  // namespace ember::program
