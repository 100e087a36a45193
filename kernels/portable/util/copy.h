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
/// per row of a 7×7 plane cost more than the copy): the largest power-of-two
/// block of at most 16 bytes that fits, the last one overlapping the one
/// before. d and s must not overlap.
template <typename T>
inline void copy_row_inline(T* d, const T* s, int64_t n) {
  auto* db = reinterpret_cast<unsigned char*>(d);
  const auto* sb = reinterpret_cast<const unsigned char*>(s);
  const int64_t bytes = n * static_cast<int64_t>(sizeof(T));
  if (bytes >= 16) {
    for (int64_t i = 0; i + 16 <= bytes; i += 16) std::memcpy(db + i, sb + i, 16);
    std::memcpy(db + bytes - 16, sb + bytes - 16, 16);
  } else if (bytes >= 8) {
    std::memcpy(db, sb, 8);
    std::memcpy(db + bytes - 8, sb + bytes - 8, 8);
  } else if (bytes >= 4) {
    std::memcpy(db, sb, 4);
    std::memcpy(db + bytes - 4, sb + bytes - 4, 4);
  } else {
    for (int64_t i = 0; i < bytes; ++i) db[i] = sb[i];
  }
}

}  // namespace ember::kernels::portable
