// Reading and writing NumPy `.npy` files (format versions 1.0–3.0), for the
// command-line tools. Only little-endian, C-order arrays of plain dtypes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/scalar_type.h"

namespace ember::tools {

struct NpyArray {
  ScalarType dtype = ScalarType::Float;
  std::vector<int32_t> shape;
  std::vector<uint8_t> data;
};

/// Reads `path`; on failure returns false and sets `error`.
bool read_npy(const std::string& path, NpyArray* out, std::string* error);

/// Writes a C-order array; returns false and sets `error` on failure.
bool write_npy(const std::string& path, ScalarType dtype, const std::vector<int32_t>& shape,
               const void* data, size_t nbytes, std::string* error);

}  // namespace ember::tools
