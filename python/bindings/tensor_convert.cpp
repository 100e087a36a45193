#include "python/bindings/tensor_convert.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

namespace ember::python {

ScalarType scalar_type_of(const nb::dlpack::dtype& dt) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(dt.code);
  if (code == Code::Float && dt.bits == 32) return ScalarType::Float;
  if (code == Code::Float && dt.bits == 64) return ScalarType::Double;
  if (code == Code::Float && dt.bits == 16) return ScalarType::Half;
  if (code == Code::Bfloat && dt.bits == 16) return ScalarType::BFloat16;
  if (code == Code::Int && dt.bits == 8) return ScalarType::Char;
  if (code == Code::Int && dt.bits == 16) return ScalarType::Short;
  if (code == Code::Int && dt.bits == 32) return ScalarType::Int;
  if (code == Code::Int && dt.bits == 64) return ScalarType::Long;
  if (code == Code::UInt && dt.bits == 8) return ScalarType::Byte;
  if (code == Code::UInt && dt.bits == 16) return ScalarType::UInt16;
  if (code == Code::UInt && dt.bits == 32) return ScalarType::UInt32;
  if (code == Code::UInt && dt.bits == 64) return ScalarType::UInt64;
  if (code == Code::Bool && dt.bits == 8) return ScalarType::Bool;
  throw nb::type_error(("unsupported array dtype (code " + std::to_string(dt.code) + ", " +
                        std::to_string(dt.bits) + " bits)")
                           .c_str());
}

void tensor_from_array(nb::ndarray<nb::ro> array, ArrayTensor* out) {
  const size_t ndim = array.ndim();
  if (ndim > static_cast<size_t>(kTensorMaxDim)) throw nb::value_error("too many dimensions");
  out->sizes.resize(std::max<size_t>(ndim, 1));
  out->strides.resize(std::max<size_t>(ndim, 1));
  out->dim_order.resize(std::max<size_t>(ndim, 1));
  std::vector<int64_t> given(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    out->sizes[i] = static_cast<int32_t>(array.shape(i));
    given[i] = array.stride(i);
  }
  // Row-major (ignoring size-1 dims, whose strides say nothing) keeps the
  // identity order; anything else is ordered outermost (largest stride) first.
  bool row_major = true;
  int64_t expect = 1;
  for (size_t i = ndim; i-- > 0;) {
    if (out->sizes[i] != 1 && given[i] != expect) row_major = false;
    expect *= out->sizes[i];
  }
  std::vector<size_t> order(ndim);
  std::iota(order.begin(), order.end(), 0);
  if (!row_major) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return given[a] > given[b]; });
  }
  for (size_t i = 0; i < ndim; ++i) out->dim_order[i] = static_cast<uint8_t>(order[i]);
  Tensor& t = out->tensor;
  t.dtype = scalar_type_of(array.dtype());
  t.dim = static_cast<int32_t>(ndim);
  t.sizes = out->sizes.data();
  t.dim_order = out->dim_order.data();
  t.strides = out->strides.data();
  t.data = const_cast<void*>(array.data());
  t.update_strides();
  // An empty array has no memory to lay out (NumPy gives it zero strides).
  for (size_t i = 0; i < ndim && t.numel > 0; ++i) {
    if (out->sizes[i] > 1 && t.strides[i] != given[i]) {
      throw nb::value_error(
          "array is not dense in any dimension order (sliced or broadcast view); pass a copy");
    }
  }
  t.capacity_bytes = t.nbytes();
}

nb::object array_from_tensor(const Tensor& t, bool as_torch) {
  const size_t nbytes = t.nbytes();
  auto* copy = new uint8_t[nbytes > 0 ? nbytes : 1];
  if (nbytes > 0) std::memcpy(copy, t.data, nbytes);
  nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  std::vector<size_t> shape(static_cast<size_t>(t.dim));
  std::vector<int64_t> strides(static_cast<size_t>(t.dim));
  for (int32_t i = 0; i < t.dim; ++i) {
    shape[i] = static_cast<size_t>(t.sizes[i]);
    strides[i] = t.strides[i];
  }
  nb::dlpack::dtype dt;
  dt.lanes = 1;
  dt.bits = static_cast<uint8_t>(element_size(t.dtype) * 8);
  using Code = nb::dlpack::dtype_code;
  switch (t.dtype) {
    case ScalarType::Float:
    case ScalarType::Double:
    case ScalarType::Half: dt.code = static_cast<uint8_t>(Code::Float); break;
    case ScalarType::BFloat16: dt.code = static_cast<uint8_t>(Code::Bfloat); break;
    case ScalarType::Bool: dt.code = static_cast<uint8_t>(Code::Bool); break;
    case ScalarType::Byte:
    case ScalarType::UInt16:
    case ScalarType::UInt32:
    case ScalarType::UInt64: dt.code = static_cast<uint8_t>(Code::UInt); break;
    default: dt.code = static_cast<uint8_t>(Code::Int); break;
  }
  if (as_torch) {
    // Through DLPack: every dtype torch has, bfloat16 included.
    nb::ndarray<nb::pytorch> tensor(copy, shape.size(), shape.data(), owner, strides.data(), dt);
    return tensor.cast();
  }
  nb::ndarray<nb::numpy> arr(copy, shape.size(), shape.data(), owner, strides.data(), dt);
  return arr.cast();
}

void raise_error(Error err, const char* context) {
  const std::string message =
      std::string(context) + ": " + last_error_message() + " [" + error_name(err) + "]";
  nb::object module = nb::module_::import_("ember._C");
  PyErr_SetString(module.attr("EmberError").ptr(), message.c_str());
  throw nb::python_error();
}

}  // namespace ember::python
