// Copies between tensors laid out by strides, with optional dtype conversion.
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"

namespace ember::kernels::portable {

/// For every index i of out's shape: out[i] = src.data[sum_d i_d * src_strides[d]],
/// converted to out's dtype. `src_strides` has out.dim entries (0 on broadcast
/// dims). Both dtypes must be supported (`is_supported_dtype`).
void strided_copy(const Tensor& src, const int64_t* src_strides, Tensor& out);

/// Copies src into out element by element in row-major logical order (as a
/// reshape does); both have the same numel and dtype; any dim orders.
void reshape_copy(const Tensor& src, Tensor& out);

}  // namespace ember::kernels::portable
