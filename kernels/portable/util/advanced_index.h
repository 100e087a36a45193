// Advanced indexing (`self[indices]` with a Tensor?[] list), shared by
// aten::index.Tensor_out and aten::index_put.out.
//
// Each non-None entry is an integer index (int64/int32; negative values wrap)
// covering one dim of self, or a bool/uint8 mask covering as many dims as it
// has (it acts as the 1-D index list of its true positions, in row-major
// order). The integer indices and masks broadcast together to `bshape`. As in
// NumPy/PyTorch, the broadcast dims replace the indexed dims in place when the
// non-None entries are adjacent in the list, and go first otherwise.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/view.h"

namespace ember::kernels::portable {

struct AdvancedIndex {
  struct Entry {
    const Tensor* t = nullptr;
    bool mask = false;
    int32_t first_dim = 0;  // First self dim it covers.
    int32_t ndims = 1;      // Self dims covered.
    int64_t bstrides[kTensorMaxDim] = {};  // Integer index: strides over bshape.
    int64_t nnz = 0;                       // Mask: number of true entries.
    // Mask: the last true entry found (its rank and row-major position), so
    // walking j = 0, 1, 2, ... costs one pass over the mask.
    int64_t cursor_j = -1;
    int64_t cursor_pos = -1;
  };

  int32_t count = 0;  // Non-None entries.
  Entry entries[kTensorMaxDim];
  int32_t bdim = 0;
  int32_t bshape[kTensorMaxDim] = {};
  int32_t result_dim = 0;
  int32_t result_shape[kTensorMaxDim] = {};
  int32_t bpos = 0;                       // First result dim of the broadcast block.
  int32_t result_to_self[kTensorMaxDim];  // Self dim of a result dim; -1 in the block.
  const Tensor* self = nullptr;

  /// Validates `indices` against self and computes the result shape; false
  /// after failing with a message naming `name`.
  [[nodiscard]] bool init(KernelContext& ctx, const Tensor& self,
                          std::span<Tensor* const> indices, const char* name);

  std::span<const int32_t> shape() const {
    return {result_shape, static_cast<size_t>(result_dim)};
  }

  /// The offset (with `strides`, self's shape) of the self element that
  /// result index `idx` reads; false after failing on an out-of-range index.
  [[nodiscard]] bool offset(KernelContext& ctx, const int32_t* idx, const int64_t* strides,
                            const char* name, int64_t* out);

 private:
  int64_t mask_position(Entry& e, int64_t j);
};

}  // namespace ember::kernels::portable
