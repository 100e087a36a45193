// Unary tests and bitwise/logical negation:
//   aten::{isinf,isnan,signbit,logical_not,bitwise_not}.out(Tensor self, *, Tensor(a!) out)
// isinf/isnan/logical_not: any input dtype (integers are never inf/NaN; NaN
// is "true" for logical_not, as eager); the bool result is stored in out's
// dtype (bool usually, any dtype accepted as eager's out= does).
// bitwise_not: integral and bool (bool: logical not); keeps self's dtype.
#include <bit>
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/elementwise_mixed.h"
#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_unary_predicate.h"

namespace ember::kernels::portable {
namespace {

/// out = pred(self) for a predicate over compute values, any input dtype.
template <typename Pred>
void run_predicate(KernelContext& ctx, const Tensor& self, Tensor& out, Pred pred) {
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out")) return;
  if (!resize_out(ctx, out, self.shape())) return;
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_unary_to<S, BoolByte>(self, out, pred);
  });
}

}  // namespace

void isinf_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_predicate(ctx, self, out, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) return std::isinf(x);
    else return false;
  });
}

void isnan_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_predicate(ctx, self, out, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) return std::isnan(x);
    else return false;
  });
}

// signbit: the sign bit itself for floats (-0 and -NaN are negative);
// x < 0 for signed integers; false for unsigned and bool.
void signbit_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_predicate(ctx, self, out, [](auto x) {
    using T = decltype(x);
    // The bit itself, masked: GCC 12 fails (an internal compiler error) to
    // vectorise std::signbit's shift into a bool.
    if constexpr (std::is_same_v<T, float>) return (std::bit_cast<uint32_t>(x) & 0x80000000u) != 0;
    else if constexpr (std::is_same_v<T, double>) {
      return (std::bit_cast<uint64_t>(x) & 0x8000000000000000ull) != 0;
    }
    else if constexpr (std::is_signed_v<T>) return x < T(0);
    else return false;
  });
}

void logical_not_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_predicate(ctx, self, out, [](auto x) { return x == decltype(x)(0); });
}

void bitwise_not_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kIntegral | kBoolType, false>(ctx, self, out, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return static_cast<T>(~x);
  });
}

}  // namespace ember::kernels::portable
