// Comparisons, Tensor and Scalar forms:
//   aten::{eq,ne,lt,le,gt,ge}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::{eq,ne,lt,le,gt,ge}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// Every dtype. Operands are compared in their promoted dtype (so uint8 < -1
// compares against 255, as eager does), with broadcasting; comparisons with
// NaN are false except ne. The bool result is stored in out's dtype (bool
// usually; any dtype, like eager's out=).
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "kernels/generated/functions/portable/op_comparison.h"

namespace ember::kernels::portable {
namespace {

struct Eq { template <typename T> bool operator()(T a, T b) const { return a == b; } };
struct Ne { template <typename T> bool operator()(T a, T b) const { return a != b; } };
struct Lt { template <typename T> bool operator()(T a, T b) const { return a < b; } };
struct Le { template <typename T> bool operator()(T a, T b) const { return a <= b; } };
struct Gt { template <typename T> bool operator()(T a, T b) const { return a > b; } };
struct Ge { template <typename T> bool operator()(T a, T b) const { return a >= b; } };

template <typename Cmp>
void compare_tensor(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  if (!prepare_binary(ctx, self, other, out, ScalarType::Bool)) return;
  const ScalarType common = result_type(self, other);
  (void)dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_binary_to<S, BoolByte>(self, other, out, Cmp{});
  });
}

template <typename Cmp>
void compare_scalar(KernelContext& ctx, const Tensor& self, const EValue& other, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out")) return;
  if (!resize_out(ctx, out, self.shape())) return;
  const ScalarType common = result_type(self, other);
  (void)dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    // The scalar takes the common dtype first (wrapping like eager's cast).
    const CT v = convert<CT>(convert<S>(scalar_as<CT>(other)));
    apply_unary_to<S, BoolByte>(self, out, [v](CT x) { return Cmp{}(x, v); });
  });
}

}  // namespace

#define EMBER_COMPARE_TENSOR(op, Cmp)                                                       \
  void op##_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) { \
    compare_tensor<Cmp>(ctx, self, other, out);                                             \
  }
#define EMBER_COMPARE_SCALAR(op, Cmp)                                                       \
  void op##_out(KernelContext& ctx, const Tensor& self, const EValue& other, Tensor& out) { \
    compare_scalar<Cmp>(ctx, self, other, out);                                             \
  }

EMBER_COMPARE_TENSOR(eq_Tensor, Eq)
EMBER_COMPARE_TENSOR(ne_Tensor, Ne)
EMBER_COMPARE_TENSOR(lt_Tensor, Lt)
EMBER_COMPARE_TENSOR(le_Tensor, Le)
EMBER_COMPARE_TENSOR(gt_Tensor, Gt)
EMBER_COMPARE_TENSOR(ge_Tensor, Ge)
EMBER_COMPARE_SCALAR(eq_Scalar, Eq)
EMBER_COMPARE_SCALAR(ne_Scalar, Ne)
EMBER_COMPARE_SCALAR(lt_Scalar, Lt)
EMBER_COMPARE_SCALAR(le_Scalar, Le)
EMBER_COMPARE_SCALAR(gt_Scalar, Gt)
EMBER_COMPARE_SCALAR(ge_Scalar, Ge)

#undef EMBER_COMPARE_TENSOR
#undef EMBER_COMPARE_SCALAR

}  // namespace ember::kernels::portable
