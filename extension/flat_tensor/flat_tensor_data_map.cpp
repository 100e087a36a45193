#include "extension/flat_tensor/flat_tensor_data_map.h"

#include <cstring>

#include "runtime/executor/extended_header.h"
#include "schema/flat_tensor_generated.h"

namespace ember::extension {
namespace {

bool add_overflows(uint64_t a, uint64_t b) { return a + b < a; }

}  // namespace

Result<FlatTensorDataMap> FlatTensorDataMap::load(DataLoader* loader) {
  EMBER_CHECK_OR_RETURN(loader != nullptr, Error::InvalidArgument, "named data: no data loader");
  EMBER_TRY_ASSIGN(const size_t file_size, loader->size());
  EMBER_CHECK_OR_RETURN(file_size >= ExtendedHeader::kOffset + ExtendedHeader::kLength,
                        Error::InvalidProgram,
                        "named data file: %zu bytes is too short for a .ptd file", file_size);
  size_t prefix_size = file_size < ExtendedHeader::kReadSize ? file_size : ExtendedHeader::kReadSize;
  EMBER_TRY_ASSIGN(FreeableBuffer prefix, loader->load(0, prefix_size));
  const auto* bytes = static_cast<const uint8_t*>(prefix.data());
  EMBER_CHECK_OR_RETURN(std::memcmp(bytes + 4, ember_ft::FlatTensorIdentifier(), 4) == 0,
                        Error::InvalidProgram,
                        "named data file: identifier is not FT01 (not a .ptd file)");
  Result<ExtendedHeader> header = ExtendedHeader::parse(bytes, prefix_size, "FH01");
  EMBER_CHECK_OR_RETURN(header.error() != Error::NotFound, Error::InvalidProgram,
                        "named data file: no FH01 header after the identifier");
  if (!header.ok()) return header.error();
  EMBER_CHECK_OR_RETURN(header->program_size >= ExtendedHeader::kOffset + ExtendedHeader::kLength &&
                            header->program_size <= file_size,
                        Error::InvalidProgram,
                        "named data file: header says the FlatBuffer is %llu bytes, the file has "
                        "%zu (truncated file?)",
                        static_cast<unsigned long long>(header->program_size), file_size);
  EMBER_CHECK_OR_RETURN(
      !add_overflows(header->segment_base_offset, header->segment_data_size) &&
          header->segment_base_offset + header->segment_data_size <= file_size &&
          (header->segment_data_size == 0 || header->segment_base_offset >= header->program_size),
      Error::InvalidProgram,
      "named data file: segments (%llu bytes at %llu) lie outside the file (%zu bytes)",
      static_cast<unsigned long long>(header->segment_data_size),
      static_cast<unsigned long long>(header->segment_base_offset), file_size);

  FlatTensorDataMap map;
  EMBER_TRY_ASSIGN(map.flatbuffer_, loader->load(0, header->program_size));
  EMBER_CHECK_OR_RETURN(reinterpret_cast<uintptr_t>(map.flatbuffer_.data()) % 8 == 0,
                        Error::InvalidArgument, "named data: FlatBuffer at %p is not 8-byte aligned",
                        map.flatbuffer_.data());
  flatbuffers::Verifier verifier(static_cast<const uint8_t*>(map.flatbuffer_.data()),
                                 map.flatbuffer_.size());
  EMBER_CHECK_OR_RETURN(ember_ft::VerifyFlatTensorBuffer(verifier), Error::InvalidProgram,
                        "named data file: FlatBuffer failed verification (corrupt or truncated)");
  map.root_ = ember_ft::GetFlatTensor(map.flatbuffer_.data());
  const auto* segments = map.root_->segments();
  const uint32_t num_segments = segments != nullptr ? segments->size() : 0;
  for (uint32_t i = 0; i < num_segments; ++i) {
    const auto* seg = segments->Get(i);
    EMBER_CHECK_OR_RETURN(!add_overflows(seg->offset(), seg->size()) &&
                              seg->offset() + seg->size() <= header->segment_data_size,
                          Error::InvalidProgram,
                          "named data file: segment %u (%llu bytes at %llu) lies past the end of "
                          "the segment data (%llu bytes)",
                          i, static_cast<unsigned long long>(seg->size()),
                          static_cast<unsigned long long>(seg->offset()),
                          static_cast<unsigned long long>(header->segment_data_size));
  }
  const auto* named = map.root_->named_data();
  for (uint32_t i = 0; named != nullptr && i < named->size(); ++i) {
    const auto* entry = named->Get(i);
    EMBER_CHECK_OR_RETURN(entry->key() != nullptr, Error::InvalidProgram,
                          "named data file: entry %u has no key", i);
    const char* key = entry->key()->c_str();
    EMBER_CHECK_OR_RETURN(entry->segment_index() < num_segments, Error::InvalidProgram,
                          "named data file: '%s' names segment %u of %u", key,
                          entry->segment_index(), num_segments);
    const auto* layout = entry->tensor_layout();
    EMBER_CHECK_OR_RETURN(layout != nullptr, Error::InvalidProgram,
                          "named data file: '%s' has no tensor layout", key);
    const auto type = static_cast<ScalarType>(layout->scalar_type());
    EMBER_CHECK_OR_RETURN(element_size(type) != 0, Error::InvalidProgram,
                          "named data file: '%s' has unknown scalar type %d", key,
                          static_cast<int>(layout->scalar_type()));
    const uint32_t rank = layout->sizes() != nullptr ? layout->sizes()->size() : 0;
    const uint32_t order_rank = layout->dim_order() != nullptr ? layout->dim_order()->size() : 0;
    EMBER_CHECK_OR_RETURN(rank == order_rank && rank <= 16, Error::InvalidProgram,
                          "named data file: '%s' has %u sizes and %u dim order entries", key, rank,
                          order_rank);
    uint32_t seen = 0;
    uint64_t nbytes = element_size(type);
    for (uint32_t d = 0; d < rank; ++d) {
      const uint8_t o = layout->dim_order()->Get(d);
      const int32_t s = layout->sizes()->Get(d);
      EMBER_CHECK_OR_RETURN(o < rank && (seen & (1u << o)) == 0 && s >= 0, Error::InvalidProgram,
                            "named data file: '%s' has a bad dim order or a negative size", key);
      seen |= 1u << o;
      EMBER_CHECK_OR_RETURN(s == 0 || nbytes <= (uint64_t{1} << 62) / static_cast<uint64_t>(s),
                            Error::InvalidProgram, "named data file: '%s' is too large", key);
      nbytes *= static_cast<uint64_t>(s);
    }
    EMBER_CHECK_OR_RETURN(nbytes <= segments->Get(entry->segment_index())->size(),
                          Error::InvalidProgram,
                          "named data file: '%s' needs %llu bytes, its segment has %llu", key,
                          static_cast<unsigned long long>(nbytes),
                          static_cast<unsigned long long>(segments->Get(entry->segment_index())->size()));
  }
  if (header->segment_data_size > 0) {
    EMBER_TRY_ASSIGN(map.segment_data_,
                     loader->load(header->segment_base_offset, header->segment_data_size));
  }
  return map;
}

size_t FlatTensorDataMap::num_tensors() const {
  return root_->named_data() != nullptr ? root_->named_data()->size() : 0;
}

int64_t FlatTensorDataMap::find(const char* key) const {
  const auto* named = root_->named_data();
  for (uint32_t i = 0; named != nullptr && i < named->size(); ++i) {
    if (std::strcmp(named->Get(i)->key()->c_str(), key) == 0) return i;
  }
  return -1;
}

Result<TensorLayout> FlatTensorDataMap::tensor_layout(const char* key) const {
  const int64_t i = find(key);
  if (i < 0) return Error::NotFound;
  const auto* layout = root_->named_data()->Get(static_cast<uint32_t>(i))->tensor_layout();
  TensorLayout out;
  out.dtype = static_cast<ScalarType>(layout->scalar_type());
  if (layout->sizes() != nullptr) out.sizes = {layout->sizes()->data(), layout->sizes()->size()};
  if (layout->dim_order() != nullptr) {
    out.dim_order = {layout->dim_order()->data(), layout->dim_order()->size()};
  }
  return out;
}

Result<std::span<const uint8_t>> FlatTensorDataMap::data(const char* key) const {
  const int64_t i = find(key);
  if (i < 0) return Error::NotFound;
  const auto* seg = root_->segments()->Get(
      root_->named_data()->Get(static_cast<uint32_t>(i))->segment_index());
  const auto* base = static_cast<const uint8_t*>(segment_data_.data());
  return std::span<const uint8_t>(base + seg->offset(), seg->size());
}

}  // namespace ember::extension
