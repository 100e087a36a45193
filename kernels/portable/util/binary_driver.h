// The drivers of broadcasting binary ops that differ only in the elementwise
// op: `(Tensor self, Tensor other, *, Tensor(a!) out)` and
// `(Tensor self, Scalar other, *, Tensor(a!) out)`.
#pragma once

#include <cstdint>

#include "kernels/portable/util/binary.h"

namespace ember::kernels::portable {

/// out = op(self, other), broadcast, in the promoted dtype (float32 for
/// integral/bool results when kToFloat) if it is in kSet.
template <uint32_t kSet, bool kToFloat, typename Op>
void binary_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out,
                       Op op) {
  ScalarType common = result_type(self, other);
  if (kToFloat && !is_floating_type(common)) common = ScalarType::Float;
  if (!prepare_binary(ctx, self, other, out, common)) return;
  const bool ok = dispatch_dtype<kSet>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_binary<S>(self, other, out, op, &ctx);
  });
  if (!ok) fail_dtype(ctx, "self/other (promoted)", common);
}

/// out = op(t, scalar), or op(scalar, t) when kScalarFirst, in the promoted
/// dtype `common` (checked by the caller) with the scalar cast to it first
/// (wrapping like eager's cast). False when `common` is not in kSet.
template <uint32_t kSet, bool kScalarFirst = false, typename Op>
[[nodiscard]] bool apply_with_scalar(const Tensor& t, const EValue& scalar, Tensor& out,
                                     ScalarType common, Op op) {
  return dispatch_dtype<kSet>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const CT b = convert<CT>(convert<S>(scalar_as<CT>(scalar)));
    if constexpr (kScalarFirst) {
      apply_unary<S>(t, out, [b, &op](CT x) { return op(b, x); });
    } else {
      apply_unary<S>(t, out, [b, &op](CT x) { return op(x, b); });
    }
  });
}

/// out = op(self, other) for a Scalar other, in the promoted dtype if it is
/// in kSet.
template <uint32_t kSet, typename Op>
void binary_scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other, Tensor& out,
                       Op op) {
  const ScalarType common = prepare_tensor_scalar(ctx, self, "self", other, out, false);
  if (common == kUndefinedDtype) return;
  if (!apply_with_scalar<kSet>(self, other, out, common, op)) {
    fail_dtype(ctx, "self/other (promoted)", common);
  }
}

}  // namespace ember::kernels::portable
