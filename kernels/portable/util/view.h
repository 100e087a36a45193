// Strided views over existing tensors, for the shape and data-movement
// kernels: a slice, a selected index, a flipped dim or a padded interior is a
// `TensorView` (sizes, strides and a data offset over a base tensor's memory)
// that `strided_copy` reads from or writes into. Views own no data.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/dtype.h"
#include "runtime/core/tensor.h"

namespace ember::kernels::portable {

/// The checks every copy of a view makes: self's dtype one the kernels know,
/// out of self's dtype. False after failing.
bool check_view_copy_args(KernelContext& ctx, const Tensor& self, const Tensor& out);

/// A tensor header over another tensor's memory. Fill `sizes`/`strides` for
/// `dim` dims, then call `finish`; `t` is then usable as a Tensor (its dim
/// order is the identity and only describes strides loosely: use it with
/// `strided_copy`, which goes by strides). Not copyable: `t` points into it.
struct TensorView {
  Tensor t;
  int32_t sizes[kTensorMaxDim] = {};
  int64_t strides[kTensorMaxDim] = {};
  uint8_t dim_order[kTensorMaxDim] = {};

  TensorView() = default;
  TensorView(const TensorView&) = delete;
  TensorView& operator=(const TensorView&) = delete;

  /// Points the view at `base`'s data shifted by `offset` elements.
  void finish(const Tensor& base, int32_t dim, int64_t offset) {
    t.dtype = base.dtype;
    t.dim = dim;
    t.sizes = sizes;
    t.strides = strides;
    t.dim_order = dim_order;
    t.numel = 1;
    for (int32_t d = 0; d < dim; ++d) {
      dim_order[d] = static_cast<uint8_t>(d);
      t.numel *= sizes[d];
    }
    // Never offset a null pointer (empty tensors have no memory).
    t.data = base.data == nullptr ? nullptr
                                  : static_cast<char*>(base.data) +
                                        offset * static_cast<int64_t>(element_size(base.dtype));
    t.capacity_bytes = 0;
    t.dynamism = TensorShapeDynamism::Static;
  }

  /// The whole of `base` (same sizes and strides).
  void init_full(const Tensor& base) {
    for (int32_t d = 0; d < base.dim; ++d) {
      sizes[d] = base.sizes[d];
      strides[d] = base.strides[d];
    }
    finish(base, base.dim, 0);
  }
};

template <typename F>
void dispatch_element_size_impl(size_t esize, F&& f) {
  switch (esize) {
    case 1: f(TypeTag<uint8_t>{}); break;
    case 2: f(TypeTag<uint16_t>{}); break;
    case 4: f(TypeTag<uint32_t>{}); break;
    case 8: f(TypeTag<uint64_t>{}); break;
    default: break;
  }
}

/// Calls `f(TypeTag<U>{})` with an unsigned type U of `t`'s element size, for
/// kernels that move elements without looking at them (one instantiation per
/// size instead of per dtype).
template <typename F>
void dispatch_element_size(ScalarType t, F&& f) {
  dispatch_element_size_impl(element_size(t), static_cast<F&&>(f));
}

/// Reads element `off` of an int32 or int64 index tensor.
inline int64_t load_index(const Tensor& index, int64_t off) {
  return index.dtype == ScalarType::Long ? index.data_ptr<int64_t>()[off]
                                         : static_cast<int64_t>(index.data_ptr<int32_t>()[off]);
}

/// Fails unless `index` holds int64 or int32 values.
bool check_index_dtype(KernelContext& ctx, const Tensor& index, const char* name);

/// Checks an index value against a dim of `size`; negative values wrap when
/// `wrap` (Python-style indexing) and fail otherwise (gather, embedding).
/// Fails with "<name>: index <v> is out of bounds for dim <dim> with size
/// <size>" and returns false.
bool checked_index(KernelContext& ctx, int64_t value, int64_t size, int32_t dim, bool wrap,
                   const char* name, int64_t* out);

/// Calls f(const int32_t* idx) for every index of `shape` in row-major order
/// while f returns true.
template <typename F>
void for_each_index(std::span<const int32_t> shape, F&& f) {
  const int32_t n = static_cast<int32_t>(shape.size());
  for (int32_t d = 0; d < n; ++d) {
    if (shape[d] == 0) return;
  }
  int32_t idx[kTensorMaxDim] = {};
  while (true) {
    if (!f(static_cast<const int32_t*>(idx))) return;
    int32_t d = n - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/// Offset in elements of index `idx` in a tensor with `strides`.
inline int64_t offset_of(const int32_t* idx, const int64_t* strides, int32_t dim) {
  int64_t off = 0;
  for (int32_t d = 0; d < dim; ++d) off += idx[d] * strides[d];
  return off;
}

}  // namespace ember::kernels::portable
