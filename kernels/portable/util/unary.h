// Shared driver for unary elementwise kernels of the form
//   aten::<op>.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// args: self, out, out(return).
#pragma once

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/elementwise.h"

namespace ember::kernels::portable {

/// Runs out = op(self). With `kToFloat`, integral and bool inputs compute in
/// float32 (PyTorch's int → float promotion for sin, tanh, ...); otherwise the
/// computation keeps self's dtype, which must be in kSet.
template <uint32_t kSet, bool kToFloat, typename Op>
void run_unary_op(KernelContext& ctx, EValue** args, Op op) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 1, "out");
  if (out == nullptr) return;
  if (!check_supported(ctx, *self, "self") || !check_supported(ctx, *out, "out")) return;
  if (!resize_out(ctx, *out, self->shape())) return;
  ScalarType common = self->dtype;
  if (kToFloat && !is_floating_type(common)) common = ScalarType::Float;
  if (!check_can_cast(ctx, common, *out)) return;
  const bool ok = dispatch_dtype<kSet>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_unary<S>(*self, *out, [&](compute_t<S> x) { return static_cast<compute_t<S>>(op(x)); });
  });
  if (!ok) fail_dtype(ctx, "self", self->dtype);
}

}  // namespace ember::kernels::portable
