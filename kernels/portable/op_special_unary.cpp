// Unary special functions of the form
//   aten::<op>.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// for digamma erfinv i0 special_i0e special_i1 special_i1e special_ndtri
// special_erfcx special_bessel_j0/j1/y0/y1 special_modified_bessel_i0/i1/k0/k1
// special_scaled_modified_bessel_k0/k1 special_spherical_bessel_j0
// special_airy_ai.
// Integral and bool inputs compute in float32 (eager's promotion). Eager
// takes float16/bfloat16 for digamma, erfinv, i0, i0e, i1, i1e only; the
// others refuse them, as here. Every dtype computes in double
// (util/special_math.h) and rounds once.
#include "kernels/generated/functions/portable/op_special_unary.h"
#include "kernels/portable/util/special_math.h"
#include "kernels/portable/util/unary.h"

namespace ember::kernels::portable {

// `arg`: the input's schema name, for refusals of the 16-bit floats.
#define EMBER_SPECIAL_UNARY(op, kSet, fn, arg)                                 \
  void op##_out(KernelContext& ctx, const Tensor& self, Tensor& out) {        \
    if (kSet == kF32F64 && (self.dtype == ScalarType::Half ||                 \
                            self.dtype == ScalarType::BFloat16)) {            \
      fail_dtype(ctx, arg, self.dtype);                                       \
      return;                                                                 \
    }                                                                         \
    run_unary_op<kSet, true>(ctx, self, out, [](auto x) {                     \
      using T = decltype(x);                                                  \
      return static_cast<T>(special::fn(static_cast<double>(x)));             \
    });                                                                       \
  }

EMBER_SPECIAL_UNARY(digamma, kFloating, digamma, "self")
EMBER_SPECIAL_UNARY(erfinv, kFloating, erfinv, "self")
EMBER_SPECIAL_UNARY(i0, kFloating, i0, "self")
EMBER_SPECIAL_UNARY(special_i0e, kFloating, i0e, "self")
EMBER_SPECIAL_UNARY(special_i1, kFloating, i1, "self")
EMBER_SPECIAL_UNARY(special_i1e, kFloating, i1e, "self")
EMBER_SPECIAL_UNARY(special_ndtri, kF32F64, ndtri, "self")
EMBER_SPECIAL_UNARY(special_erfcx, kF32F64, erfcx, "self")
EMBER_SPECIAL_UNARY(special_bessel_j0, kF32F64, bessel_j0, "self")
EMBER_SPECIAL_UNARY(special_bessel_j1, kF32F64, bessel_j1, "self")
EMBER_SPECIAL_UNARY(special_bessel_y0, kF32F64, bessel_y0, "self")
EMBER_SPECIAL_UNARY(special_bessel_y1, kF32F64, bessel_y1, "self")
EMBER_SPECIAL_UNARY(special_modified_bessel_i0, kF32F64, i0, "self")
EMBER_SPECIAL_UNARY(special_modified_bessel_i1, kF32F64, i1, "self")
EMBER_SPECIAL_UNARY(special_modified_bessel_k0, kF32F64, k0, "self")
EMBER_SPECIAL_UNARY(special_modified_bessel_k1, kF32F64, k1, "self")
EMBER_SPECIAL_UNARY(special_scaled_modified_bessel_k0, kF32F64, k0e, "x")
EMBER_SPECIAL_UNARY(special_scaled_modified_bessel_k1, kF32F64, k1e, "x")
EMBER_SPECIAL_UNARY(special_spherical_bessel_j0, kF32F64, spherical_bessel_j0, "x")
EMBER_SPECIAL_UNARY(special_airy_ai, kF32F64, airy_ai, "x")

#undef EMBER_SPECIAL_UNARY

}  // namespace ember::kernels::portable
