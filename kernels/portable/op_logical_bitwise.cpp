// Bitwise and logical binary ops:
//   aten::bitwise_{and,or,xor}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::bitwise_{and,or,xor}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//   aten::logical_{and,or,xor}.out(Tensor self, Tensor other, *, Tensor(a!) out)
// bitwise: integral and bool dtypes after promotion (a float operand is an
// error naming the dtype, as in eager). logical: any dtypes, each operand
// read as "!= 0" (NaN is true), the bool result stored in out's dtype.
#include "kernels/portable/util/binary_driver.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "kernels/generated/functions/portable/op_logical_bitwise.h"

namespace ember::kernels::portable {
namespace {

struct And { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a & b); } };
struct Or { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a | b); } };
struct Xor { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); } };

// Reads every operand as bool (its own "!= 0"); no promotion is involved.
template <typename Op>
void logical(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  if (!prepare_binary(ctx, self, other, out, ScalarType::Bool)) return;
  apply_binary_to<BoolByte, BoolByte>(self, other, out, Op{});
}

}  // namespace

#define EMBER_BITWISE_TENSOR(op, Op)                                                        \
  void op##_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) { \
    binary_tensor_out<kIntegral | kBoolType, false>(ctx, self, other, out, Op{});           \
  }
#define EMBER_BITWISE_SCALAR(op, Op)                                                        \
  void op##_out(KernelContext& ctx, const Tensor& self, const EValue& other, Tensor& out) { \
    binary_scalar_out<kIntegral | kBoolType>(ctx, self, other, out, Op{});                  \
  }
#define EMBER_LOGICAL(op, Op)                                                               \
  void op##_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) { \
    logical<Op>(ctx, self, other, out);                                                     \
  }

EMBER_BITWISE_TENSOR(bitwise_and_Tensor, And)
EMBER_BITWISE_TENSOR(bitwise_or_Tensor, Or)
EMBER_BITWISE_TENSOR(bitwise_xor_Tensor, Xor)
EMBER_BITWISE_SCALAR(bitwise_and_Scalar, And)
EMBER_BITWISE_SCALAR(bitwise_or_Scalar, Or)
EMBER_BITWISE_SCALAR(bitwise_xor_Scalar, Xor)
EMBER_LOGICAL(logical_and, And)
EMBER_LOGICAL(logical_or, Or)
EMBER_LOGICAL(logical_xor, Xor)

#undef EMBER_BITWISE_TENSOR
#undef EMBER_BITWISE_SCALAR
#undef EMBER_LOGICAL

}  // namespace ember::kernels::portable
