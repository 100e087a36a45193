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

WriteResult write_program(ember_fb::ProgramT program,
                          const std::vector<std::span<const uint8_t>>& constants,
                          const std::vector<std::span<const uint8_t>>& delegate_blobs,
                          const WriterOptions& options,
                          const std::vector<std::span<const uint8_t>>& named_blobs,
                          const std::vector<std::span<const uint8_t>>& mutable_data) {
  WriteResult result;
  if (options.segment_alignment == 0 || options.constant_alignment == 0) {
    result.error = "alignments must be positive";
    return result;
  }
  // Segment payloads in file order; offsets are relative to the segment base.
  std::vector<std::vector<uint8_t>> segment_data;
  program.segments.clear();
  program.constant_segment.reset();
  program.constant_buffer.clear();

  // Tensors' data in one segment, each aligned, entry 0 of the offsets
  // reserved (data_buffer_idx 0 means "no data").
  auto subsegment = [&](const std::vector<std::span<const uint8_t>>& blobs) {
    auto offsets = std::make_unique<ember_fb::SubsegmentOffsetsT>();
    offsets->offsets.push_back(0);
    if (!blobs.empty()) {
      std::vector<uint8_t> data;
      for (const auto& c : blobs) {
        const uint64_t offset = align_up(data.size(), options.constant_alignment);
        data.resize(offset);
        offsets->offsets.push_back(offset);
        data.insert(data.end(), c.begin(), c.end());
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
      segment_data.emplace_back(blob.begin(), blob.end());
    }
  }
  for (auto& plan : program.execution_plan) {
    for (auto& delegate : plan->delegates) {
      if (!delegate->processed) continue;
      const uint32_t i = delegate->processed->index;
      if (i >= delegate_blobs.size()) {
        result.error = "delegate '" + delegate->id + "' refers to blob " + std::to_string(i) +
                       " but only " + std::to_string(delegate_blobs.size()) + " were given";
        return result;
      }
      delegate->processed->location = blob_location[i];
      delegate->processed->index = blob_index[i];
    }
  }

  // Named data: one segment per blob, shared by the entries naming it.
  std::vector<uint32_t> named_segment(named_blobs.size());
  for (size_t i = 0; i < named_blobs.size(); ++i) {
    named_segment[i] = static_cast<uint32_t>(segment_data.size());
    segment_data.emplace_back(named_blobs[i].begin(), named_blobs[i].end());
  }
  for (auto& entry : program.named_data) {
    if (entry->segment_index >= named_blobs.size()) {
      result.error = "named data '" + entry->key + "' refers to blob " +
                     std::to_string(entry->segment_index) + " but only " +
                     std::to_string(named_blobs.size()) + " were given";
      return result;
    }
    entry->segment_index = named_segment[entry->segment_index];
  }

  const std::vector<uint64_t> offsets = segment_offsets(segment_data, options.segment_alignment);
  for (size_t i = 0; i < segment_data.size(); ++i) {
    auto seg = std::make_unique<ember_fb::DataSegmentT>();
    seg->offset = offsets[i];
    seg->size = segment_data[i].size();
    program.segments.push_back(std::move(seg));
  }

  flatbuffers::FlatBufferBuilder fbb(1024);
  fbb.Finish(pack_program(fbb, program), ember_fb::ProgramIdentifier());
  result.bytes = lay_out_file(fbb.GetBufferPointer(), fbb.GetSize(), "eh00", segment_data, offsets,
                              options.segment_alignment);
  return result;
}

WriteResult write_program_from_json(
    const std::string& program_json, const std::vector<std::span<const uint8_t>>& constants,
    const std::vector<std::span<const uint8_t>>& delegate_blobs, const WriterOptions& options,
    const std::vector<std::span<const uint8_t>>& named_blobs,
    const std::vector<std::span<const uint8_t>>& mutable_data) {
  WriteResult result;
  flatbuffers::IDLOptions idl_options;
  idl_options.strict_json = false;
  flatbuffers::Parser parser(idl_options);
  if (!parser.Parse(kProgramSchemaText)) {
    result.error = "internal: schema does not parse: " + parser.error_;
    return result;
  }
  if (!parser.Parse(program_json.c_str())) {
    result.error = "program JSON does not match the schema: " + parser.error_;
    return result;
  }
  const uint8_t* buf = parser.builder_.GetBufferPointer();
  flatbuffers::Verifier verifier(buf, parser.builder_.GetSize());
  if (!ember_fb::VerifyProgramBuffer(verifier)) {
    result.error = "internal: the parsed program does not verify";
    return result;
  }
  ember_fb::ProgramT program;
  ember_fb::GetProgram(buf)->UnPackTo(&program);
  return write_program(std::move(program), constants, delegate_blobs, options, named_blobs,
                       mutable_data);
}

}  // namespace ember::program
