// Unary ops that keep self's dtype:
//   aten::{abs,neg,ceil,floor,round,trunc,sign}.out(Tensor self, *, Tensor(a!) out)
//   aten::round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out)
// abs and neg: real dtypes, integers wrap (abs(INT_MIN) = INT_MIN, as eager).
// ceil/floor/round/trunc: real dtypes, identity on integers; round is half to
// even. round.decimals: floating only. sign: every dtype (identity on bool),
// sign(NaN) = 0 as in eager. None of these accept bool except sign.
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_unary_real.h"

namespace ember::kernels::portable {
namespace {

template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

}  // namespace

void abs_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kRealTypes, false>(ctx, self, out, [](auto x) {
    using T = decltype(x);
    if constexpr (kIsInt<T>) return x < T(0) ? wrap_sub(T(0), x) : x;
    else return std::fabs(x);
  });
}

void neg_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kRealTypes, false>(ctx, self, out, [](auto x) {
    using T = decltype(x);
    if constexpr (kIsInt<T>) return wrap_sub(T(0), x);
    else return -x;
  });
}

void sign_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kAllTypes, false>(ctx, self, out, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, bool>) return x;
    else if constexpr (std::is_unsigned_v<T>) return static_cast<T>(x > T(0));
    else return static_cast<T>((T(0) < x) - (x < T(0)));
  });
}

#define EMBER_ROUNDING_UNARY(op, fn)                              \
  void op##_out(KernelContext& ctx, const Tensor& self, Tensor& out) { \
    run_unary_op<kRealTypes, false>(ctx, self, out, [](auto x) { \
      if constexpr (kIsInt<decltype(x)>) return x;                \
      else return fn(x);                                          \
    });                                                           \
  }

EMBER_ROUNDING_UNARY(ceil, std::ceil)
EMBER_ROUNDING_UNARY(floor, std::floor)
EMBER_ROUNDING_UNARY(round, std::nearbyint)  // Default rounding mode: half to even.
EMBER_ROUNDING_UNARY(trunc, std::trunc)

#undef EMBER_ROUNDING_UNARY

void round_decimals_out(KernelContext& ctx, const Tensor& self, int64_t decimals, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, decimals >= -30 && decimals <= 30,
                     "decimals: %lld is outside [-30, 30]", static_cast<long long>(decimals));
  // Same formula as eager: scale by 10^|decimals| in the compute type, round
  // half to even, scale back.
  const bool neg = decimals < 0;
  const int64_t n = neg ? -decimals : decimals;
  run_unary_op<kFloating, false>(ctx, self, out, [neg, n](auto x) {
    using T = decltype(x);
    const T p = static_cast<T>(std::pow(10.0, static_cast<double>(n)));
    return neg ? std::nearbyint(x / p) * p : std::nearbyint(x * p) / p;
  });
}

}  // namespace ember::kernels::portable
