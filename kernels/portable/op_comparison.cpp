// Comparisons, Tensor and Scalar forms:
//   aten::{eq,ne,lt,le,gt,ge}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::{eq,ne,lt,le,gt,ge}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// Every dtype. Operands are compared in their promoted dtype (so uint8 < -1
// compares against 255, as eager does), with broadcasting; comparisons with
// NaN are false except ne. The bool result is stored in out's dtype (bool
// usually; any dtype, like eager's out=).
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "kernels/generated/kernel_functions.h"

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

#define EMBER_COMPARISON(op, Cmp)                                                           \
  void op##_Tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other,        \
                       Tensor& out) {                                                      \
    compare_tensor<Cmp>(ctx, self, other, out);                                            \
  }                                                                                        \
  void op##_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other,        \
                       Tensor& out) {                                                      \
    compare_scalar<Cmp>(ctx, self, other, out);                                            \
  }

EMBER_COMPARISON(eq, Eq)
EMBER_COMPARISON(ne, Ne)
EMBER_COMPARISON(lt, Lt)
EMBER_COMPARISON(le, Le)
EMBER_COMPARISON(gt, Gt)
EMBER_COMPARISON(ge, Ge)

#undef EMBER_COMPARISON

}  // namespace ember::kernels::portable
