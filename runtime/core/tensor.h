// Tensor: a view of typed memory with sizes and a dim order.
//
// The runtime never owns tensor data: `data` points into planned memory, a
// constant segment, or a caller's buffer. Sizes, dim order and strides point
// into memory from the method allocator. Strides are derived from sizes and
// dim order (the format does not store them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/core/error.h"
#include "runtime/core/scalar_type.h"

namespace ember {

inline constexpr int kTensorMaxDim = 16;

enum class TensorShapeDynamism : uint8_t { Static = 0, DynamicBound = 1, DynamicUnbound = 2 };

struct Tensor {
  ScalarType dtype = ScalarType::Float;
  int32_t dim = 0;
  int32_t* sizes = nullptr;
  uint8_t* dim_order = nullptr;
  int64_t* strides = nullptr;  // In elements.
  void* data = nullptr;
  int64_t numel = 1;
  // Bytes of memory behind `data` (the planned capacity for bounded tensors).
  size_t capacity_bytes = 0;
  TensorShapeDynamism dynamism = TensorShapeDynamism::Static;
  // Per-dimension upper bounds of a DynamicBound tensor (the sizes the
  // program was planned for); null for static tensors.
  const int32_t* bound_sizes = nullptr;

  size_t nbytes() const { return static_cast<size_t>(numel) * element_size(dtype); }
  int32_t size(int32_t d) const { return sizes[d]; }
  std::span<const int32_t> shape() const { return {sizes, static_cast<size_t>(dim)}; }

  template <typename T>
  T* data_ptr() const { return static_cast<T*>(data); }

  /// True when the dim order is the identity (row-major contiguous).
  bool is_contiguous_dim_order() const {
    for (int32_t i = 0; i < dim; ++i) {
      if (dim_order[i] != i) return false;
    }
    return true;
  }

  /// Recomputes strides and numel from sizes and dim order.
  void update_strides();

  /// Sets new sizes (same rank). A static tensor accepts only its own sizes;
  /// a bounded one accepts any sizes whose bytes fit its capacity.
  Error resize(std::span<const int32_t> new_sizes);
};

/// Product of sizes, or -1 when a size is negative or the product overflows
/// `max_elements`.
int64_t checked_numel(std::span<const int32_t> sizes, int64_t max_elements);

/// Writes "[2, 3, 4]" into `buf`; returns buf.
const char* format_shape(std::span<const int32_t> sizes, char* buf, size_t buf_size);

}  // namespace ember
