// The named-data file writer: tensors by fully qualified name → `.ptd` bytes
// (FlatTensor, schema/flat_tensor.fbs; the file layout of program/file_layout.h
// with header magic "FH01"). Entries with equal bytes share one segment, so a
// weight stored under two names (tied, or in two layouts) is written once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "program/program_writer.h"

namespace ember::program {

struct NamedTensor {
  std::string key;  // the tensor's fully qualified name in the program
  ember_fb::ScalarType scalar_type = ember_fb::ScalarType::FLOAT32;
  std::vector<int32_t> sizes;
  std::vector<uint8_t> dim_order;
  std::span<const uint8_t> data;  // in dim-order memory layout
};

/// Writes the `.ptd` file; errors name the entry (duplicate keys, a layout
/// whose dim order is not a permutation, data of the wrong size).
WriteResult write_flat_tensor(const std::vector<NamedTensor>& tensors,
                              uint64_t segment_alignment = 128);

/// Same, streamed into the file at `path` from the tensors' bytes (no copy
/// of the weights in memory). The error, or empty; a partial file is removed.
std::string write_flat_tensor_file(const std::string& path,
                                   const std::vector<NamedTensor>& tensors,
                                   uint64_t segment_alignment = 128);

}  // namespace ember::program
