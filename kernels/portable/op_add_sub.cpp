// aten::add.out / aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)
// out = self ± alpha * other with broadcasting and PyTorch type promotion.
// add takes every dtype (bool: logical or); sub rejects bool, as PyTorch does.
#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_add_sub.h"

namespace ember::kernels::portable {
namespace {

enum class Sign { Plus, Minus };

template <Sign kSign>
void add_sub(KernelContext& ctx, const Tensor& self, const Tensor& other, const EValue& alpha,
             Tensor& out) {
  const ScalarType common = result_type(self, other);
  if (!prepare_binary(ctx, self, other, out, common)) return;
  if (kSign == Sign::Minus && common == ScalarType::Bool) {
    ctx.fail(Error::InvalidArgument, "self: subtraction of bool tensors is not supported");
    return;
  }
  if (alpha.is_double() && !is_floating_type(common)) {
    ctx.fail(Error::InvalidArgument, "alpha: a floating alpha needs floating inputs, got %s",
             scalar_type_name(common));
    return;
  }
  auto body = [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const CT a = scalar_as<CT>(alpha);
    apply_binary<S>(self, other, out, [a](CT x, CT y) {
      if constexpr (kSign == Sign::Plus) {
        return wrap_add(x, wrap_mul(a, y));
      } else {
        return wrap_sub(x, wrap_mul(a, y));
      }
    }, &ctx);
  };
  bool ok;
  if constexpr (kSign == Sign::Plus) {
    ok = dispatch_dtype<kAllTypes>(common, body);
  } else {
    ok = dispatch_dtype<kRealTypes>(common, body);
  }
  if (!ok) fail_dtype(ctx, "self", common);
}

}  // namespace

void add_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const EValue& alpha,
             Tensor& out) {
  add_sub<Sign::Plus>(ctx, self, other, alpha, out);
}

void sub_out(KernelContext& ctx, const Tensor& self, const Tensor& other, const EValue& alpha,
             Tensor& out) {
  add_sub<Sign::Minus>(ctx, self, other, alpha, out);
}

}  // namespace ember::kernels::portable
