// Copies between tensors laid out by strides, with optional dtype conversion.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/core/tensor.h"

namespace ember::kernels::portable {

/// For every index i of out's shape: out[i] = src.data[sum_d i_d * src_strides[d]],
/// converted to out's dtype. `src_strides` has out.dim entries (0 on broadcast
/// dims). Both dtypes must be supported (`is_supported_dtype`).
void strided_copy(const Tensor& src, const int64_t* src_strides, Tensor& out);

/// Copies src into out element by element in row-major logical order (as a
/// reshape does); both have the same numel and dtype; any dim orders.
void reshape_copy(const Tensor& src, Tensor& out);

/// Copies n elements of a short row without a library call (a memcpy call
/// per row of a 7×7 plane cost more than the copy): fixed 16-byte blocks,
/// the last one overlapping the one before. d and s must not overlap.
template <typename T>
inline void copy_row_inline(T* d, const T* s, int64_t n) {
  constexpr int64_t kBlock = 16 / static_cast<int64_t>(sizeof(T));
  if (kBlock < 1 || n < kBlock) {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  for (int64_t i = 0; i + kBlock <= n; i += kBlock) std::memcpy(d + i, s + i, 16);
  std::memcpy(d + n - kBlock, s + n - kBlock, 16);
}

}  // namespace ember::kernels::portable
