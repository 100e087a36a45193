#include "program/flat_tensor_writer.h"

#include <cstring>
#include <set>
#include <unordered_map>

#include "program/file_layout.h"
#include "schema/flat_tensor_generated.h"

namespace ember::program {
namespace {

size_t element_size(ember_fb::ScalarType t) {
  switch (t) {
    case ember_fb::ScalarType::UINT8:
    case ember_fb::ScalarType::INT8:
    case ember_fb::ScalarType::BOOL: return 1;
    case ember_fb::ScalarType::INT16:
    case ember_fb::ScalarType::FLOAT16:
    case ember_fb::ScalarType::BFLOAT16: return 2;
    case ember_fb::ScalarType::INT32:
    case ember_fb::ScalarType::FLOAT32: return 4;
    case ember_fb::ScalarType::INT64:
    case ember_fb::ScalarType::FLOAT64: return 8;
    default: return 0;
  }
}

}  // namespace

namespace {

// The file into `sink`: the error, or empty. Segments are the callers' bytes.
std::string write_flat_tensor_to(const std::vector<NamedTensor>& tensors,
                                 uint64_t segment_alignment, const ByteSink& sink) {
  if (segment_alignment == 0) return "segment alignment must be positive";
  std::vector<SegmentView> segments;
  std::unordered_multimap<uint64_t, uint32_t> segment_of;  // by a hash: equal bytes share one
  std::set<std::string> keys;
  struct Entry {
    const NamedTensor* tensor;
    uint32_t segment;
  };
  std::vector<Entry> entries;
  for (const NamedTensor& t : tensors) {
    if (!keys.insert(t.key).second) return "tensor '" + t.key + "' is named twice";
    const size_t esize = element_size(t.scalar_type);
    if (esize == 0) {
      return "tensor '" + t.key + "': unsupported scalar type " +
             std::to_string(static_cast<int>(t.scalar_type));
    }
    std::vector<bool> seen(t.sizes.size(), false);
    bool permutation = t.dim_order.size() == t.sizes.size();
    for (uint8_t d : t.dim_order) {
      permutation = permutation && d < seen.size() && !seen[d];
      if (d < seen.size()) seen[d] = true;
    }
    if (!permutation) {
      return "tensor '" + t.key + "': dim_order is not a permutation of its " +
             std::to_string(t.sizes.size()) + " dimensions";
    }
    uint64_t numel = 1;
    for (int32_t s : t.sizes) numel *= static_cast<uint64_t>(s < 0 ? 0 : s);
    if (numel * esize != t.data.size()) {
      return "tensor '" + t.key + "': " + std::to_string(t.data.size()) + " bytes of data for " +
             std::to_string(numel * esize) + " bytes of tensor";
    }
    uint64_t hash = 1469598103934665603ull;  // FNV-1a
    for (uint8_t b : t.data) hash = (hash ^ b) * 1099511628211ull;
    int64_t segment = -1;
    for (auto [it, end] = segment_of.equal_range(hash); it != end && segment < 0; ++it) {
      const std::span<const uint8_t> other = segments[it->second].pieces[0].data;
      if (other.size() == t.data.size() &&
          (other.empty() || std::memcmp(other.data(), t.data.data(), other.size()) == 0)) {
        segment = it->second;
      }
    }
    if (segment < 0) {
      segment = static_cast<int64_t>(segments.size());
      segment_of.emplace(hash, static_cast<uint32_t>(segment));
      segments.push_back({t.data.size(), {{0, t.data}}});
    }
    entries.push_back({&t, static_cast<uint32_t>(segment)});
  }
  const std::vector<uint64_t> offsets = segment_offsets(segments, segment_alignment);
  // Packed by hand so that every vector is present, empty or not (a 0-dim
  // tensor's sizes), as the program writer does; the object API drops them.
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<flatbuffers::Offset<ember_fb::DataSegment>> segs;
  for (size_t i = 0; i < segments.size(); ++i) {
    segs.push_back(ember_fb::CreateDataSegment(fbb, offsets[i], segments[i].size));
  }
  std::vector<flatbuffers::Offset<ember_ft::NamedData>> named;
  for (const Entry& e : entries) {
    const NamedTensor& t = *e.tensor;
    auto layout = ember_ft::CreateTensorLayout(fbb, t.scalar_type, fbb.CreateVector(t.sizes),
                                               fbb.CreateVector(t.dim_order));
    named.push_back(ember_ft::CreateNamedData(fbb, fbb.CreateString(t.key), e.segment, layout));
  }
  fbb.Finish(ember_ft::CreateFlatTensor(fbb, 0, fbb.CreateVector(segs), fbb.CreateVector(named)),
             ember_ft::FlatTensorIdentifier());
  if (!write_file_layout(fbb.GetBufferPointer(), fbb.GetSize(), "FH01", segments, offsets,
                         segment_alignment, sink)) {
    return "writing the named-data file failed";
  }
  return {};
}

}  // namespace

WriteResult write_flat_tensor(const std::vector<NamedTensor>& tensors, uint64_t segment_alignment) {
  WriteResult result;
  result.error = write_flat_tensor_to(tensors, segment_alignment,
                                      [&result](const uint8_t* data, size_t size) {
                                        result.bytes.insert(result.bytes.end(), data, data + size);
                                        return true;
                                      });
  if (!result.ok()) result.bytes.clear();
  return result;
}

std::string write_flat_tensor_file(const std::string& path,
                                   const std::vector<NamedTensor>& tensors,
                                   uint64_t segment_alignment) {
  return write_to_file(path, [&](const ByteSink& sink) {
    return write_flat_tensor_to(tensors, segment_alignment, sink);
  });
}


}  // namespace ember::program
