// Tensors kept outside the program (a `.ptd` named-data file), found by
// fully qualified name when load_method binds a tensor whose
// ExtraTensorInfo.location is EXTERNAL. extension/flat_tensor reads the file.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"

namespace ember {

struct TensorLayout {
  ScalarType dtype = ScalarType::Float;
  std::span<const int32_t> sizes;
  std::span<const uint8_t> dim_order;
};

class NamedDataMap {
 public:
  virtual ~NamedDataMap() = default;
  /// The layout of tensor `key`; NotFound (no message set) when absent.
  virtual Result<TensorLayout> tensor_layout(const char* key) const = 0;
  /// Its bytes, valid as long as the map (an mmapped file is not copied);
  /// NotFound (no message set) when absent.
  virtual Result<std::span<const uint8_t>> data(const char* key) const = 0;
};

}  // namespace ember
