// aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// args: self, other, out, out(return). Broadcasting, type promotion, all
// dtypes (bool: logical and).
#include "kernels/portable/util/binary.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void mul_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* other = tensor_arg(ctx, args, 1, "other");
  if (other == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  const ScalarType common = result_type(*self, *other);
  if (!prepare_binary(ctx, *self, *other, *out, common)) return;
  const bool ok = dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    apply_binary<S>(*self, *other, *out, [](CT x, CT y) { return wrap_mul(x, y); });
  });
  if (!ok) fail_dtype(ctx, "self", common);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::mul.out", mul_out, 4);

}  // namespace ember::kernels::portable
