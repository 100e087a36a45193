#include "runtime/executor/program.h"

#include <cstring>

#include "runtime/executor/extended_header.h"
#include "runtime/executor/program_verifier.h"
#include "schema/program_generated.h"

namespace ember {
namespace {
constexpr size_t kIdentifierOffset = 4;
constexpr size_t kMinFileSize = 8;  // Root offset + identifier.
// Generous limits: a large model has ~10^5 tables; the default cap of 10^6
// would refuse nothing real, but we raise it for very large programs.
constexpr flatbuffers::uoffset_t kVerifierMaxDepth = 64;
constexpr flatbuffers::uoffset_t kVerifierMaxTables = 100'000'000;
}  // namespace

Result<Program> Program::load(DataLoader* loader, Verification verification) {
  EMBER_CHECK_OR_RETURN(loader != nullptr, Error::InvalidArgument, "Program::load: null loader");
  Result<size_t> file_size_r = loader->size();
  if (!file_size_r.ok()) return file_size_r.error();
  const size_t file_size = file_size_r.get();
  EMBER_CHECK_OR_RETURN(file_size >= kMinFileSize, Error::InvalidProgram,
                        "program is %zu bytes: too short to be a .pte file (empty or truncated)",
                        file_size);

  const size_t prefix_size = file_size < ExtendedHeader::kReadSize ? file_size
                                                                   : ExtendedHeader::kReadSize;
  uint64_t program_size = file_size;
  uint64_t segment_base_offset = 0;
  {
    EMBER_TRY_ASSIGN(FreeableBuffer prefix, loader->load(0, prefix_size));
    const auto* bytes = static_cast<const uint8_t*>(prefix.data());
    EMBER_CHECK_OR_RETURN(flatbuffers::BufferHasIdentifier(bytes, ember_fb::ProgramIdentifier()),
                          Error::InvalidProgram,
                          "not a .pte program: file identifier is '%.4s', expected '%s'",
                          reinterpret_cast<const char*>(bytes + kIdentifierOffset),
                          ember_fb::ProgramIdentifier());
    Result<ExtendedHeader> header = ExtendedHeader::parse(bytes, prefix.size());
    if (header.ok()) {
      program_size = header->program_size;
      segment_base_offset = header->segment_base_offset;
      EMBER_CHECK_OR_RETURN(program_size >= kMinFileSize && program_size <= file_size,
                            Error::InvalidProgram,
                            "header says the program is %llu bytes but the file has %zu "
                            "(truncated file?)",
                            static_cast<unsigned long long>(program_size), file_size);
      EMBER_CHECK_OR_RETURN(
          segment_base_offset == 0 ||
              (segment_base_offset >= program_size && segment_base_offset <= file_size),
          Error::InvalidProgram,
          "header's segment base offset %llu is outside [%llu, %zu] (truncated file?)",
          static_cast<unsigned long long>(segment_base_offset),
          static_cast<unsigned long long>(program_size), file_size);
      if (header->segment_data_size != 0) {
        EMBER_CHECK_OR_RETURN(
            segment_base_offset + header->segment_data_size <= file_size, Error::InvalidProgram,
            "header says segments end at byte %llu but the file has %zu (truncated file?)",
            static_cast<unsigned long long>(segment_base_offset + header->segment_data_size),
            file_size);
      }
    } else if (header.error() != Error::NotFound) {
      return header.error();
    }
  }

  EMBER_TRY_ASSIGN(FreeableBuffer data, loader->load(0, program_size));
  // FlatBuffers reads 8-byte scalars in place; buffers are 16-aligned inside.
  EMBER_CHECK_OR_RETURN(reinterpret_cast<uintptr_t>(data.data()) % 16 == 0, Error::InvalidArgument,
                        "program data at %p is not 16-byte aligned; load it into aligned memory",
                        data.data());
  flatbuffers::Verifier verifier(static_cast<const uint8_t*>(data.data()), data.size(),
                                 kVerifierMaxDepth, kVerifierMaxTables);
  EMBER_CHECK_OR_RETURN(ember_fb::VerifyProgramBuffer(verifier), Error::InvalidProgram,
                        "program FlatBuffer failed verification (corrupt or truncated file, %zu "
                        "bytes)",
                        data.size());
  const ember_fb::Program* fb = ember_fb::GetProgram(data.data());

  if (verification == Verification::Full) {
    EMBER_TRY(verify_program(fb, ProgramLayout{file_size, segment_base_offset}));
  }
  Program program(static_cast<FreeableBuffer&&>(data), fb, loader, file_size, segment_base_offset,
                  verification == Verification::Full);

  const auto* cs = fb->constant_segment();
  if (cs != nullptr && cs->offsets() != nullptr && cs->offsets()->size() > 1) {
    const auto* segments = fb->segments();
    EMBER_CHECK_OR_RETURN(segments != nullptr && cs->segment_index() < segments->size(),
                          Error::InvalidProgram,
                          "constant segment index %u is out of range", cs->segment_index());
    const auto* seg = segments->Get(cs->segment_index());
    EMBER_TRY_ASSIGN(program.constant_segment_,
                     loader->load(segment_base_offset + seg->offset(), seg->size()));
  }
  const auto* mutable_segments = fb->mutable_data_segments();
  if (mutable_segments != nullptr && mutable_segments->size() > 0 &&
      mutable_segments->Get(0)->offsets() != nullptr &&
      mutable_segments->Get(0)->offsets()->size() > 1) {
    const auto* segments = fb->segments();
    const uint32_t index = mutable_segments->Get(0)->segment_index();
    EMBER_CHECK_OR_RETURN(segments != nullptr && index < segments->size(), Error::InvalidProgram,
                          "mutable data segment index %u is out of range", index);
    const auto* seg = segments->Get(index);
    EMBER_TRY_ASSIGN(program.mutable_segment_,
                     loader->load(segment_base_offset + seg->offset(), seg->size()));
  }
  if (verification == Verification::Full) {
    for (uint32_t i = 0; i < fb->execution_plan()->size(); ++i) {
      EMBER_TRY(verify_plan(fb, fb->execution_plan()->Get(i), program.constant_segment_.size(),
                            program.mutable_segment_.size()));
    }
  }
  return program;
}

Result<FreeableBuffer> Program::load_named_data(const char* key) const {
  const auto* named = program_->named_data();
  for (uint32_t i = 0; named != nullptr && i < named->size(); ++i) {
    const auto* entry = named->Get(i);
    if (entry->key() == nullptr || std::strcmp(entry->key()->c_str(), key) != 0) continue;
    const auto* segments = program_->segments();
    EMBER_CHECK_OR_RETURN(segments != nullptr && entry->segment_index() < segments->size(),
                          Error::InvalidProgram, "named data '%s': segment %u is out of range",
                          key, entry->segment_index());
    const auto* seg = segments->Get(entry->segment_index());
    return loader_->load(segment_base_offset_ + seg->offset(), seg->size());
  }
  return Error::NotFound;
}

Result<FreeableBuffer> Program::load_delegate_data(
    const ember_fb::BackendDelegateDataReference* ref) const {
  if (ref->location() == ember_fb::DataLocation::INLINE) {
    const auto* inline_data = program_->backend_delegate_data();
    EMBER_CHECK_OR_RETURN(inline_data != nullptr && ref->index() < inline_data->size(),
                          Error::InvalidProgram, "inline delegate data %u is out of range",
                          ref->index());
    const auto* data = inline_data->Get(ref->index())->data();
    if (data == nullptr) return FreeableBuffer(nullptr, 0);
    return FreeableBuffer(data->data(), data->size());
  }
  const auto* segments = program_->segments();
  EMBER_CHECK_OR_RETURN(segments != nullptr && ref->index() < segments->size(),
                        Error::InvalidProgram, "delegate segment %u is out of range",
                        ref->index());
  const auto* seg = segments->Get(ref->index());
  return loader_->load(segment_base_offset_ + seg->offset(), seg->size());
}

size_t Program::num_methods() const {
  return program_->execution_plan() != nullptr ? program_->execution_plan()->size() : 0;
}

Result<const char*> Program::get_method_name(size_t index) const {
  EMBER_CHECK_OR_RETURN(index < num_methods(), Error::OutOfRange,
                        "method index %zu is out of range (%zu methods)", index, num_methods());
  return program_->execution_plan()->Get(static_cast<uint32_t>(index))->name()->c_str();
}

Result<MethodMeta> Program::method_meta(const char* method_name) const {
  for (size_t i = 0; i < num_methods(); ++i) {
    const auto* plan = program_->execution_plan()->Get(static_cast<uint32_t>(i));
    if (std::strcmp(plan->name()->c_str(), method_name) == 0) return MethodMeta(plan);
  }
  return set_error(Error::NotFound, "the program has no method named '%s'", method_name);
}

}  // namespace ember
