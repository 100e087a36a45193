// Comparisons, Tensor and Scalar forms:
//   aten::{eq,ne,lt,le,gt,ge}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::{eq,ne,lt,le,gt,ge}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// args: self, other, out, out(return).
// Every dtype. Operands are compared in their promoted dtype (so uint8 < -1
// compares against 255, as eager does), with broadcasting; comparisons with
// NaN are false except ne. The bool result is stored in out's dtype (bool
// usually; any dtype, like eager's out=).
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

struct Eq { template <typename T> bool operator()(T a, T b) const { return a == b; } };
struct Ne { template <typename T> bool operator()(T a, T b) const { return a != b; } };
struct Lt { template <typename T> bool operator()(T a, T b) const { return a < b; } };
struct Le { template <typename T> bool operator()(T a, T b) const { return a <= b; } };
struct Gt { template <typename T> bool operator()(T a, T b) const { return a > b; } };
struct Ge { template <typename T> bool operator()(T a, T b) const { return a >= b; } };

template <typename Cmp>
void compare_tensor_out(KernelContext& ctx, EValue** args) {
  Tensor *self = nullptr, *other = nullptr, *out = nullptr;
  if (!tensor_tensor_args(ctx, args, &self, &other, &out)) return;
  if (!prepare_binary(ctx, *self, *other, *out, ScalarType::Bool)) return;
  const ScalarType common = result_type(*self, *other);
  (void)dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_binary_to<S, BoolByte>(*self, *other, *out, Cmp{});
  });
}

template <typename Cmp>
void compare_scalar_out(KernelContext& ctx, EValue** args) {
  Tensor *self = nullptr, *out = nullptr;
  const EValue* other = nullptr;
  if (!tensor_scalar_args(ctx, args, "other", &self, &other, &out)) return;
  if (!check_supported(ctx, *self, "self") || !check_supported(ctx, *out, "out")) return;
  if (!resize_out(ctx, *out, self->shape())) return;
  const ScalarType common = result_type(*self, *other);
  (void)dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    // The scalar takes the common dtype first (wrapping like eager's cast).
    const CT v = convert<CT>(convert<S>(scalar_as<CT>(*other)));
    apply_unary_to<S, BoolByte>(*self, *out, [v](CT x) { return Cmp{}(x, v); });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::eq.Tensor_out", compare_tensor_out<Eq>, 4);
EMBER_REGISTER_KERNEL("aten::ne.Tensor_out", compare_tensor_out<Ne>, 4);
EMBER_REGISTER_KERNEL("aten::lt.Tensor_out", compare_tensor_out<Lt>, 4);
EMBER_REGISTER_KERNEL("aten::le.Tensor_out", compare_tensor_out<Le>, 4);
EMBER_REGISTER_KERNEL("aten::gt.Tensor_out", compare_tensor_out<Gt>, 4);
EMBER_REGISTER_KERNEL("aten::ge.Tensor_out", compare_tensor_out<Ge>, 4);
EMBER_REGISTER_KERNEL("aten::eq.Scalar_out", compare_scalar_out<Eq>, 4);
EMBER_REGISTER_KERNEL("aten::ne.Scalar_out", compare_scalar_out<Ne>, 4);
EMBER_REGISTER_KERNEL("aten::lt.Scalar_out", compare_scalar_out<Lt>, 4);
EMBER_REGISTER_KERNEL("aten::le.Scalar_out", compare_scalar_out<Le>, 4);
EMBER_REGISTER_KERNEL("aten::gt.Scalar_out", compare_scalar_out<Gt>, 4);
EMBER_REGISTER_KERNEL("aten::ge.Scalar_out", compare_scalar_out<Ge>, 4);

}  // namespace ember::kernels::portable
