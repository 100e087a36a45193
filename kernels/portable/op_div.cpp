// aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// args: self, other, out, out(return). True division: integral and bool
// inputs divide in float32 (so out must be floating); x/0 gives ±inf or NaN.
#include "kernels/portable/util/binary.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void div_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* other = tensor_arg(ctx, args, 1, "other");
  if (other == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  ScalarType common = result_type(*self, *other);
  if (!is_floating_type(common)) common = ScalarType::Float;
  if (!prepare_binary(ctx, *self, *other, *out, common)) return;
  const bool ok = dispatch_dtype<kFloating>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    apply_binary<S>(*self, *other, *out, [](CT x, CT y) { return x / y; });
  });
  if (!ok) fail_dtype(ctx, "self", common);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::div.out", div_out, 4);

}  // namespace ember::kernels::portable
