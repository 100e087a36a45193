// The C++ types typed kernels take their arguments as, and the unboxing the
// generated wrappers (tools/gen_kernels.py) use to get them from EValues.
//
// Schema type        C++ parameter
//   Tensor           const Tensor&      (an out, Tensor(a!): Tensor&)
//   Tensor?          const Tensor*      (null for None)
//   Scalar           const EValue&      (Int, Double or Bool)
//   Scalar?          const EValue*
//   int, SymInt, ScalarType, MemoryFormat, Layout   int64_t
//   float            double
//   bool             bool
//   T? of the above  std::optional<T>
//   int[]            IntSpan            int[]?   std::optional<IntSpan>
//   float[]          DoubleSpan         float[]? std::optional<DoubleSpan>
//   bool[]           BoolSpan
//   Tensor[]         TensorList         Tensor?[] TensorList (null entries for None)
//   str              std::string_view   str?     std::optional<std::string_view>
//   anything else    const EValue&
// A scalar result (sym_size, the prim ops) is `EValue& result`.
//
// load_method checked every value's kind against the kernel's signature, so
// these helpers only convert (an int argument may be a Bool, a float one an Int).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"

namespace ember {

using IntSpan = std::span<const int64_t>;
using DoubleSpan = std::span<const double>;
using BoolSpan = std::span<const bool>;
using TensorList = std::span<Tensor* const>;

inline int64_t unbox_int(const EValue& v) { return v.is_bool() ? (v.as_bool ? 1 : 0) : v.as_int; }
inline double unbox_double(const EValue& v) {
  return v.is_double() ? v.as_double : static_cast<double>(v.as_int);
}
inline bool unbox_bool(const EValue& v) { return v.is_bool() ? v.as_bool : v.as_int != 0; }

inline std::optional<int64_t> unbox_optional_int(const EValue& v) {
  if (v.is_none()) return std::nullopt;
  return unbox_int(v);
}
inline std::optional<double> unbox_optional_double(const EValue& v) {
  if (v.is_none()) return std::nullopt;
  return unbox_double(v);
}
inline std::optional<bool> unbox_optional_bool(const EValue& v) {
  if (v.is_none()) return std::nullopt;
  return unbox_bool(v);
}
inline std::optional<IntSpan> unbox_optional_int_list(const EValue& v) {
  if (v.is_none()) return std::nullopt;
  return v.as_int_list.get();
}

inline std::optional<DoubleSpan> unbox_optional_double_list(const EValue& v) {
  if (v.is_none()) return std::nullopt;
  return v.as_double_list;
}
inline std::optional<std::string_view> unbox_optional_string(const EValue& v) {
  if (v.is_none()) return std::nullopt;
  return v.as_string;
}

}  // namespace ember
