// Bitwise and logical binary ops:
//   aten::bitwise_{and,or,xor}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::bitwise_{and,or,xor}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//   aten::logical_{and,or,xor}.out(Tensor self, Tensor other, *, Tensor(a!) out)
// args: self, other, out, out(return).
// bitwise: integral and bool dtypes after promotion (a float operand is an
// error naming the dtype, as in eager). logical: any dtypes, each operand
// read as "!= 0" (NaN is true), the bool result stored in out's dtype.
#include "kernels/portable/util/binary_driver.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

struct And { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a & b); } };
struct Or { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a | b); } };
struct Xor { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); } };

template <typename Op>
void bitwise_tensor_out(KernelContext& ctx, EValue** args) {
  binary_tensor_out<kIntegral | kBoolType, false>(ctx, args, Op{});
}

template <typename Op>
void bitwise_scalar_out(KernelContext& ctx, EValue** args) {
  binary_scalar_out<kIntegral | kBoolType>(ctx, args, Op{});
}

template <typename Op>
void logical_out(KernelContext& ctx, EValue** args) {
  Tensor *self = nullptr, *other = nullptr, *out = nullptr;
  if (!tensor_tensor_args(ctx, args, &self, &other, &out)) return;
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
