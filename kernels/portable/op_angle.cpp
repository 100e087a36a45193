// aten::angle.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// The argument of a real number, as eager: pi for x < 0, 0 otherwise (-0
// included), NaN stays NaN. Real input dtypes (integers give a floating
// result, as eager promotes); out is floating.
#include <cmath>
#include <numbers>

#include "kernels/generated/functions/portable/op_angle.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "kernels/portable/util/unary.h"

namespace ember::kernels::portable {

void angle_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out")) return;
  if (self.dtype == ScalarType::Bool) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (!is_floating_type(out.dtype)) {
    ctx.fail(Error::InvalidArgument, "out: angle needs a floating dtype, got %s",
             scalar_type_name(out.dtype));
    return;
  }
  if (!resize_out(ctx, out, self.shape())) return;
  (void)dispatch_dtype<kRealTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_unary_to<S, double>(self, out, [](auto x) {
      const double v = static_cast<double>(x);
      if (std::isnan(v)) return v;
      return v < 0 ? std::numbers::pi : 0.0;
    });
  });
}

}  // namespace ember::kernels::portable
