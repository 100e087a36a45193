// Bitwise and logical binary ops:
//   aten::bitwise_{and,or,xor}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::bitwise_{and,or,xor}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//   aten::logical_{and,or,xor}.out(Tensor self, Tensor other, *, Tensor(a!) out)
// args: self, other, out, out(return).
// bitwise: integral and bool dtypes after promotion (a float operand is an
// error naming the dtype, as in eager). logical: any dtypes, each operand
// read as "!= 0" (NaN is true), the bool result stored in out's dtype.
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

struct And { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a & b); } };
struct Or { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a | b); } };
struct Xor { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); } };

template <typename Op>
void bitwise_tensor_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* other = tensor_arg(ctx, args, 1, "other");
  if (other == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  const ScalarType common = result_type(*self, *other);
  if (!prepare_binary(ctx, *self, *other, *out, common)) return;
  const bool ok = dispatch_dtype<kIntegral | kBoolType>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_binary<S>(*self, *other, *out, Op{});
  });
  if (!ok) fail_dtype(ctx, "self/other (promoted)", common);
}

template <typename Op>
void bitwise_scalar_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  const EValue* other = scalar_arg(ctx, args, 1, "other");
  if (other == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  if (!check_supported(ctx, *self, "self") || !check_supported(ctx, *out, "out")) return;
  const ScalarType common = result_type(*self, *other);
  if (!resize_out(ctx, *out, self->shape()) || !check_can_cast(ctx, common, *out)) return;
  const bool ok = dispatch_dtype<kIntegral | kBoolType>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const CT v = scalar_as<CT>(*other);
    apply_unary<S>(*self, *out, [v](CT x) { return Op{}(x, v); });
  });
  if (!ok) fail_dtype(ctx, "self/other (promoted)", common);
}

template <typename Op>
void logical_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* other = tensor_arg(ctx, args, 1, "other");
  if (other == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  if (!prepare_binary(ctx, *self, *other, *out, ScalarType::Bool)) return;
  // Read every operand as bool (its own "!= 0"); no promotion is involved.
  apply_binary_to<BoolByte, BoolByte>(*self, *other, *out, Op{});
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::bitwise_and.Tensor_out", bitwise_tensor_out<And>, 4);
EMBER_REGISTER_KERNEL("aten::bitwise_or.Tensor_out", bitwise_tensor_out<Or>, 4);
EMBER_REGISTER_KERNEL("aten::bitwise_xor.Tensor_out", bitwise_tensor_out<Xor>, 4);
EMBER_REGISTER_KERNEL("aten::bitwise_and.Scalar_out", bitwise_scalar_out<And>, 4);
EMBER_REGISTER_KERNEL("aten::bitwise_or.Scalar_out", bitwise_scalar_out<Or>, 4);
EMBER_REGISTER_KERNEL("aten::bitwise_xor.Scalar_out", bitwise_scalar_out<Xor>, 4);
EMBER_REGISTER_KERNEL("aten::logical_and.out", logical_out<And>, 4);
EMBER_REGISTER_KERNEL("aten::logical_or.out", logical_out<Or>, 4);
EMBER_REGISTER_KERNEL("aten::logical_xor.out", logical_out<Xor>, 4);

}  // namespace ember::kernels::portable
