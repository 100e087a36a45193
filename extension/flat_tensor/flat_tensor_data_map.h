// FlatTensorDataMap: a `.ptd` named-data file (schema/flat_tensor.fbs) as the
// NamedDataMap load_method reads external tensors from. Verified at load:
// header, FlatBuffer, every segment inside the file, every entry's segment
// and layout; the segment bytes are loaded once through the data loader (an
// mmapped file is not copied) and handed out by pointer.
#pragma once

#include <cstddef>

#include "runtime/core/data_loader.h"
#include "runtime/executor/named_data_map.h"

namespace ember_ft {
struct FlatTensor;
}

namespace ember::extension {

class FlatTensorDataMap final : public NamedDataMap {
 public:
  /// The loader must outlive the map; the map must outlive the methods using it.
  static Result<FlatTensorDataMap> load(DataLoader* loader);

  FlatTensorDataMap(FlatTensorDataMap&&) = default;

  Result<TensorLayout> tensor_layout(const char* key) const override;
  Result<std::span<const uint8_t>> data(const char* key) const override;
  size_t num_tensors() const;

 private:
  FlatTensorDataMap() = default;
  // The entry named `key`, or -1.
  int64_t find(const char* key) const;

  FreeableBuffer flatbuffer_;
  FreeableBuffer segment_data_;
  const ember_ft::FlatTensor* root_ = nullptr;
};

}  // namespace ember::extension
