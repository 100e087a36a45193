// aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *,
//                 Tensor(a!) out) -> Tensor(a!)
// out = min(max(self, min), max) computed in the promoted dtype of self and
// the given scalars (an int tensor clamped by a float gives float); NaN in
// self propagates; when min > max every element becomes max. Not bool.
#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_clamp.h"

namespace ember::kernels::portable {

void clamp_out(KernelContext& ctx, const Tensor& self, const EValue* min, const EValue* max,
               Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, min != nullptr || max != nullptr,
                     "at least one of min and max must be given");
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out")) return;
  ResultTypeState rt;
  rt.add_tensor(self);
  if (min != nullptr) rt.add_scalar(*min);
  if (max != nullptr) rt.add_scalar(*max);
  const ScalarType common = rt.result();
  if (!resize_out(ctx, out, self.shape()) || !check_can_cast(ctx, common, out)) return;
  const bool ok = dispatch_dtype<kRealTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const bool has_lo = min != nullptr;
    const bool has_hi = max != nullptr;
    const CT l = has_lo ? scalar_as<CT>(*min) : CT(0);
    const CT h = has_hi ? scalar_as<CT>(*max) : CT(0);
    apply_unary<S>(self, out, [=](CT x) {
      if (has_lo) x = x < l ? l : x;
      if (has_hi) x = x > h ? h : x;
      return x;
    }, &ctx);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

}  // namespace ember::kernels::portable
