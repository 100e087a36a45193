// aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *,
//                 Tensor(a!) out) -> Tensor(a!)
// args: self, min (None or Scalar), max (None or Scalar), out, out(return).
// out = min(max(self, min), max) computed in the promoted dtype of self and
// the given scalars (an int tensor clamped by a float gives float); NaN in
// self propagates; when min > max every element becomes max. Not bool.
#include "kernels/portable/util/binary.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void clamp_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  bool ok_min = false;
  bool ok_max = false;
  const EValue* lo = optional_scalar_arg(ctx, args, 1, "min", &ok_min);
  if (!ok_min) return;
  const EValue* hi = optional_scalar_arg(ctx, args, 2, "max", &ok_max);
  if (!ok_max) return;
  Tensor* out = tensor_arg(ctx, args, 3, "out");
  if (out == nullptr) return;
  EMBER_KERNEL_CHECK(ctx, lo != nullptr || hi != nullptr, "at least one of min and max must be given");
  if (!check_supported(ctx, *self, "self") || !check_supported(ctx, *out, "out")) return;
  ResultTypeState rt;
  rt.add_tensor(*self);
  if (lo != nullptr) rt.add_scalar(*lo);
  if (hi != nullptr) rt.add_scalar(*hi);
  const ScalarType common = rt.result();
  if (!resize_out(ctx, *out, self->shape()) || !check_can_cast(ctx, common, *out)) return;
  const bool ok = dispatch_dtype<kRealTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const bool has_lo = lo != nullptr;
    const bool has_hi = hi != nullptr;
    const CT l = has_lo ? scalar_as<CT>(*lo) : CT(0);
    const CT h = has_hi ? scalar_as<CT>(*hi) : CT(0);
    apply_unary<S>(*self, *out, [=](CT x) {
      if (has_lo) x = x < l ? l : x;
      if (has_hi) x = x > h ? h : x;
      return x;
    }, &ctx);
  });
  if (!ok) fail_dtype(ctx, "self", self->dtype);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::clamp.out", clamp_out, 5);

}  // namespace ember::kernels::portable
