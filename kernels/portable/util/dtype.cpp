#include "kernels/portable/util/dtype.h"

namespace ember::kernels::portable {

bool is_supported_dtype(ScalarType t) {
  return dispatch_dtype<kAllTypes>(t, [](auto) {});
}

int dtype_category(ScalarType t) {
  if (t == ScalarType::Bool) return 0;
  if (is_floating_type(t)) return 2;
  return 1;
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == kUndefinedDtype) return b;
  if (b == kUndefinedDtype) return a;
  if (a == ScalarType::Bool) return b;
  if (b == ScalarType::Bool) return a;
  const bool fa = is_floating_type(a);
  const bool fb = is_floating_type(b);
  if (fa && fb) {
    if (a == ScalarType::Double || b == ScalarType::Double) return ScalarType::Double;
    return ScalarType::Float;  // float32 with a 16-bit float, or half with bfloat16.
  }
  if (fa) return a;
  if (fb) return b;
  // Both integral. uint8 with a signed type needs a signed type that holds 255.
  if (a == ScalarType::Byte || b == ScalarType::Byte) {
    const ScalarType other = a == ScalarType::Byte ? b : a;
    return other == ScalarType::Char ? ScalarType::Short : other;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_type(from) && !is_floating_type(to)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

ScalarType scalar_dtype(const EValue& v) {
  if (v.is_bool()) return ScalarType::Bool;
  if (v.is_int()) return ScalarType::Long;
  return ScalarType::Float;
}

void ResultTypeState::add_tensor(const Tensor& t) {
  if (t.dim == 0) {
    zero_dim_result = promote_types(zero_dim_result, t.dtype);
  } else {
    dim_result = promote_types(dim_result, t.dtype);
  }
}

void ResultTypeState::add_scalar(const EValue& v) {
  // Promote within the priority by the scalar's own kind; a double wrapped
  // scalar stands for the default dtype only when it decides the result.
  wrapped_result = promote_types(wrapped_result, scalar_dtype(v));
}

namespace {
// `higher` comes from operands of higher priority; `lower` wins only with a
// higher category.
ScalarType combine(ScalarType higher, ScalarType lower) {
  if (higher == kUndefinedDtype) return lower;
  if (lower == kUndefinedDtype) return higher;
  if (dtype_category(lower) > dtype_category(higher)) return promote_types(higher, lower);
  return higher;
}
}  // namespace

ScalarType ResultTypeState::result() const {
  return combine(dim_result, combine(zero_dim_result, wrapped_result));
}

ScalarType result_type(const Tensor& a, const Tensor& b) {
  ResultTypeState s;
  s.add_tensor(a);
  s.add_tensor(b);
  return s.result();
}

ScalarType result_type(const Tensor& a, const EValue& scalar) {
  ResultTypeState s;
  s.add_tensor(a);
  s.add_scalar(scalar);
  return s.result();
}

}  // namespace ember::kernels::portable
