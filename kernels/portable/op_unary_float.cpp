// Unary math ops of the form
//   aten::<op>.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// for acos acosh asin asinh atan atanh cos cosh
// erfc exp2 lgamma log log10 log1p log2 reciprocal rsqrt sinh sqrt tan.
// Floating dtypes; integral and bool inputs compute in float32 (PyTorch's
// int → float promotion), so out must be floating. Domain errors give NaN and
// poles ±inf, as libm (and eager) do.
// These call libm in the compute type (exp and expm1 live in op_exp.cpp, erf
// in op_erf.cpp: they have vectorised float32 versions).
#include <cmath>

#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_unary_float.h"

namespace ember::kernels::portable {
#define EMBER_FLOAT_UNARY(op, expr)                                    \
  void op##_out(KernelContext& ctx, const Tensor& self, Tensor& out) { \
    run_unary_op<kFloating, true>(ctx, self, out, [](auto x) {         \
      using T = decltype(x);                                           \
      (void)sizeof(T);                                                 \
      return static_cast<T>(expr);                                     \
    });                                                                \
  }

EMBER_FLOAT_UNARY(acos, std::acos(x))
EMBER_FLOAT_UNARY(acosh, std::acosh(x))
EMBER_FLOAT_UNARY(asin, std::asin(x))
EMBER_FLOAT_UNARY(asinh, std::asinh(x))
EMBER_FLOAT_UNARY(atan, std::atan(x))
EMBER_FLOAT_UNARY(atanh, std::atanh(x))
EMBER_FLOAT_UNARY(cos, std::cos(x))
EMBER_FLOAT_UNARY(cosh, std::cosh(x))
EMBER_FLOAT_UNARY(erfc, std::erfc(x))
EMBER_FLOAT_UNARY(exp2, std::exp2(x))
EMBER_FLOAT_UNARY(lgamma, std::lgamma(x))
EMBER_FLOAT_UNARY(log, std::log(x))
EMBER_FLOAT_UNARY(log10, std::log10(x))
EMBER_FLOAT_UNARY(log1p, std::log1p(x))
EMBER_FLOAT_UNARY(log2, std::log2(x))
EMBER_FLOAT_UNARY(reciprocal, T(1) / x)
EMBER_FLOAT_UNARY(rsqrt, T(1) / std::sqrt(x))
EMBER_FLOAT_UNARY(sinh, std::sinh(x))
EMBER_FLOAT_UNARY(sqrt, std::sqrt(x))
EMBER_FLOAT_UNARY(tan, std::tan(x))

#undef EMBER_FLOAT_UNARY

}  // namespace ember::kernels::portable
