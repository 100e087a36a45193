// Conversions between NumPy arrays (via nanobind) and runtime tensors.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <vector>

#include "runtime/core/tensor.h"

namespace ember::python {

namespace nb = nanobind;

/// A runtime Tensor viewing a NumPy array's memory, owning its metadata.
struct ArrayTensor {
  std::vector<int32_t> sizes;
  std::vector<uint8_t> dim_order;
  std::vector<int64_t> strides;
  Tensor tensor;
};

/// Builds a tensor over `array` (no copy): a NumPy array or anything with
/// DLPack (torch tensors of any dtype). It must be dense in some dim order
/// (contiguous, channels-last, any permutation); raises otherwise.
void tensor_from_array(nb::ndarray<nb::ro> array, ArrayTensor* out);

/// The scalar type of a NumPy array; raises for a dtype the runtime lacks.
ScalarType scalar_type_of(const nb::dlpack::dtype& dtype);

/// A NumPy array (a torch tensor when `as_torch`: NumPy has no bfloat16)
/// holding a copy of `t`'s data in its dim order's layout (strides say how
/// to read it).
nb::object array_from_tensor(const Tensor& t, bool as_torch = false);

/// Raises ember._C.EmberError with the runtime's message for `err`.
[[noreturn]] void raise_error(Error err, const char* context);

}  // namespace ember::python
