// aten::frexp.Tensor_out(Tensor self, *, Tensor(a!) mantissa, Tensor(b!) exponent)
//
// x = mantissa · 2^exponent with |mantissa| in [0.5, 1) (std::frexp, as
// eager): ±0 gives (±0, 0); ±inf and NaN give themselves and exponent 0.
// Floating dtypes; mantissa in self's dtype, exponent int32; any dim order.
#include <cmath>

#include "kernels/generated/functions/portable/op_frexp.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "kernels/portable/util/unary.h"

namespace ember::kernels::portable {

void frexp_Tensor_out(KernelContext& ctx, const Tensor& self, Tensor& mantissa,
                      Tensor& exponent) {
  if (!is_floating_type(self.dtype)) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (!check_dtype(ctx, mantissa, "mantissa", self.dtype) ||
      !check_dtype(ctx, exponent, "exponent", ScalarType::Int)) {
    return;
  }
  if (!resize_out(ctx, mantissa, self.shape()) || !resize_out(ctx, exponent, self.shape())) {
    return;
  }
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_unary_to<S, S>(self, mantissa, [](auto x) {
      int e = 0;
      return std::isfinite(x) ? std::frexp(x, &e) : x;
    });
    apply_unary_to<S, int32_t>(self, exponent, [](auto x) {
      int e = 0;
      if (std::isfinite(x)) (void)std::frexp(x, &e);
      return static_cast<int32_t>(e);
    });
  });
}

}  // namespace ember::kernels::portable
