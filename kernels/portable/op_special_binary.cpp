// Special functions of two arguments, broadcast, in the promoted dtype
// (integral and bool inputs compute in float32, as eager):
//   aten::polygamma.out(int n, Tensor self, *, Tensor(a!) out)
//   aten::special_zeta.out / .self_scalar_out / .other_scalar_out (Hurwitz ζ(self, other))
//   aten::igamma.out, aten::igammac.out(Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::special_<polynomial>.out / .x_scalar_out / .n_scalar_out(x, n) for
//     chebyshev_polynomial_t/u/v/w, shifted_chebyshev_polynomial_t/u/v/w,
//     hermite_polynomial_h/he, laguerre_polynomial_l, legendre_polynomial_p
// polygamma, igamma, igammac take float16/bfloat16 too; zeta and the
// polynomials float32/float64 (eager's sets). Every dtype computes in double.
//
// Polynomials: n is truncated to an integer as eager does; n < 0 (and a NaN
// n, eager's x86 answer) gives 0. T/U/V/W for |x| < 1 and larger n use their
// trigonometric forms (T_n(cos θ) = cos nθ, ...), the rest the three-term
// recurrences (DLMF 18.9), as eager; a NaN x gives NaN.
#include <cmath>
#include <cstdint>

#include "kernels/generated/functions/portable/op_special_binary.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/binary_driver.h"
#include "kernels/portable/util/special_math.h"

namespace ember::kernels::portable {
namespace {

using special::kNaN;

// eager's static_cast<int64_t>(n): NaN and out-of-range become INT64_MIN (x86).
inline int64_t poly_degree(double n) {
  if (!(n > -9.2e18 && n < 9.2e18)) return INT64_MIN;
  return static_cast<int64_t>(n);
}

// The recurrence y_{k+1} = a(k) y_k - b(k) y_{k-1} from y_0 = 1, y_1 = q1.
template <typename Step>
double recur(int64_t n, double q1, Step step) {
  if (n == 0) return 1.0;
  double p = 1.0, q = q1;
  for (int64_t k = 1; k < n; ++k) {
    const double r = step(k, q, p);
    p = q;
    q = r;
    if (std::isnan(q)) break;  // stays NaN
  }
  return q;
}

inline double cheb_t(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (std::isnan(x)) return kNaN;
  if (std::fabs(x) == 1.0) return (x > 0.0 || n % 2 == 0) ? 1.0 : -1.0;
  if (n > 6 && std::fabs(x) < 1.0) return std::cos(static_cast<double>(n) * std::acos(x));
  return recur(n, x, [x](int64_t, double q, double p) { return (x + x) * q - p; });
}

inline double cheb_u(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (std::isnan(x)) return kNaN;
  const double n1 = static_cast<double>(n) + 1.0;
  if (std::fabs(x) == 1.0) return (x > 0.0 || n % 2 == 0) ? n1 : -n1;
  if (n > 8 && std::fabs(x) < 1.0) {
    const double t = std::acos(x);
    if (std::sin(t) != 0.0) return std::sin(n1 * t) / std::sin(t);
    return n1 * std::cos(n1 * t) / x;
  }
  return recur(n, x + x, [x](int64_t, double q, double p) { return (x + x) * q - p; });
}

inline double cheb_v(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (std::isnan(x)) return kNaN;
  const double odd = 2.0 * static_cast<double>(n) + 1.0;
  if (std::fabs(x) == 1.0) {
    if (x > 0.0) return 1.0;
    return n % 2 == 0 ? odd : -odd;
  }
  if (n > 8 && std::fabs(x) < 1.0) {
    const double t = std::acos(x);
    if (std::sin(t / 2.0) != 1.0) {
      return std::cos((static_cast<double>(n) + 0.5) * t) / std::cos(t / 2.0);
    }
    return n % 2 == 0 ? odd : -odd;
  }
  return recur(n, x + x - 1.0, [x](int64_t, double q, double p) { return (x + x) * q - p; });
}

inline double cheb_w(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (std::isnan(x)) return kNaN;
  const double odd = 2.0 * static_cast<double>(n) + 1.0;
  if (std::fabs(x) == 1.0) {
    if (x > 0.0) return odd;
    return n % 2 == 0 ? 1.0 : -1.0;
  }
  if (n > 8 && std::fabs(x) < 1.0) {
    const double t = std::acos(x);
    if (std::cos(t / 2.0) != 1.0) {
      return std::sin((static_cast<double>(n) + 0.5) * t) / std::sin(t / 2.0);
    }
    return x > 0.0 ? odd : (n % 2 == 0 ? 1.0 : -1.0);
  }
  return recur(n, x + x + 1.0, [x](int64_t, double q, double p) { return (x + x) * q - p; });
}

// The shifted polynomials are the plain ones at 2x - 1 (x = 1 and 0 map to
// ±1 exactly).
inline double shifted(double (*f)(double, int64_t), double x, int64_t n) {
  return f(x + x - 1.0, n);
}

inline double hermite_h(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (std::isnan(x)) return kNaN;
  return recur(n, x + x, [x](int64_t k, double q, double p) {
    return (x + x) * q - 2.0 * static_cast<double>(k) * p;
  });
}

inline double hermite_he(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (std::isnan(x)) return kNaN;
  return recur(n, x, [x](int64_t k, double q, double p) {
    return x * q - static_cast<double>(k) * p;
  });
}

inline double laguerre_l(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (std::isnan(x)) return kNaN;
  if (x == 0.0) return 1.0;
  return recur(n, 1.0 - x, [x](int64_t k, double q, double p) {
    const double kd = static_cast<double>(k);
    return ((2.0 * kd + 1.0 - x) * q - kd * p) / (kd + 1.0);
  });
}

inline double legendre_p(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (std::isnan(x)) return kNaN;
  if (std::fabs(x) == 1.0) return (x > 0.0 || n % 2 == 0) ? 1.0 : -1.0;
  return recur(n, x, [x](int64_t k, double q, double p) {
    const double kd = static_cast<double>(k);
    return ((2.0 * kd + 1.0) * x * q - kd * p) / (kd + 1.0);
  });
}

// Wraps a double function of two doubles as an op on the compute type.
template <double (*kFn)(double, double)>
struct Fn2 {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(kFn(static_cast<double>(a), static_cast<double>(b)));
  }
};

template <double (*kPoly)(double, int64_t)>
double poly(double x, double n) {
  return kPoly(x, poly_degree(n));
}
template <double (*kPoly)(double, int64_t)>
double shifted_poly(double x, double n) {
  return shifted(kPoly, x, poly_degree(n));
}

// zeta and the polynomials refuse the 16-bit floats, naming the argument.
bool check_not_16_bit(KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.dtype != ScalarType::Half && t.dtype != ScalarType::BFloat16) return true;
  fail_dtype(ctx, name, t.dtype);
  return false;
}

// The three overloads of a (Tensor, Tensor) op whose Scalar forms take the
// Scalar for either argument.
template <uint32_t kSet, typename Op>
void scalar_first(KernelContext& ctx, const EValue& a, const Tensor& b, const char* b_name,
                  Tensor& out, Op op) {
  if (!check_not_16_bit(ctx, b, b_name)) return;
  const ScalarType common = prepare_tensor_scalar(ctx, b, b_name, a, out, true);
  if (common == kUndefinedDtype) return;
  if (!apply_with_scalar<kSet, true>(b, a, out, common, op)) fail_dtype(ctx, b_name, common);
}
template <uint32_t kSet, typename Op>
void scalar_second(KernelContext& ctx, const Tensor& a, const char* a_name, const EValue& b,
                   Tensor& out, Op op) {
  if (!check_not_16_bit(ctx, a, a_name)) return;
  const ScalarType common = prepare_tensor_scalar(ctx, a, a_name, b, out, true);
  if (common == kUndefinedDtype) return;
  if (!apply_with_scalar<kSet>(a, b, out, common, op)) fail_dtype(ctx, a_name, common);
}

}  // namespace

void polygamma_out(KernelContext& ctx, int64_t n, const Tensor& self, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, n >= 0, "n: polygamma is defined for n >= 0, got %lld",
                     static_cast<long long>(n));
  const ScalarType common = is_floating_type(self.dtype) ? self.dtype : ScalarType::Float;
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out") ||
      !resize_out(ctx, out, self.shape()) || !check_can_cast(ctx, common, out)) {
    return;
  }
  const bool ok = dispatch_dtype<kFloating>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    apply_unary<S>(self, out, [n](CT x) {
      return static_cast<CT>(special::polygamma(n, static_cast<double>(x)));
    }, &ctx);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

Error polygamma_out_prepare(KernelPrepareContext& ctx, int64_t n, const Tensor& self,
                            Tensor& out) {
  (void)self, (void)out;
  if (n < 0) {
    return ctx.fail(Error::InvalidArgument, "n: polygamma is defined for n >= 0, got %lld",
                    static_cast<long long>(n));
  }
  return Error::Ok;
}

// Eager's igamma takes floating inputs only (no int -> float promotion).
static bool check_floating(KernelContext& ctx, const Tensor& self) {
  if (is_floating_type(self.dtype)) return true;
  fail_dtype(ctx, "self", self.dtype);
  return false;
}

void igamma_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  if (!check_floating(ctx, self)) return;
  binary_tensor_out<kFloating, false>(ctx, self, other, out, Fn2<special::igamma>{});
}
void igammac_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  if (!check_floating(ctx, self)) return;
  binary_tensor_out<kFloating, false>(ctx, self, other, out, Fn2<special::igammac>{});
}

void special_zeta_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  if (!check_not_16_bit(ctx, self, "self")) return;
  binary_tensor_out<kF32F64, true>(ctx, self, other, out, Fn2<special::hurwitz_zeta>{});
}
void special_zeta_self_scalar_out(KernelContext& ctx, const EValue& self, const Tensor& other,
                                  Tensor& out) {
  scalar_first<kF32F64>(ctx, self, other, "other", out, Fn2<special::hurwitz_zeta>{});
}
void special_zeta_other_scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other,
                                   Tensor& out) {
  scalar_second<kF32F64>(ctx, self, "self", other, out, Fn2<special::hurwitz_zeta>{});
}

// (Tensor x, Tensor n), (Scalar x, Tensor n) and (Tensor x, Scalar n); each
// macro is given the kernel's name without `_out`.
#define EMBER_POLY_TENSORS(kernel, fn)                                                \
  void kernel##_out(KernelContext& ctx, const Tensor& x, const Tensor& n, Tensor& out) { \
    if (!check_not_16_bit(ctx, x, "x")) return;                                         \
    binary_tensor_out<kF32F64, true>(ctx, x, n, out, Fn2<fn>{});                        \
  }
#define EMBER_POLY_X_SCALAR(kernel, fn)                                                 \
  void kernel##_out(KernelContext& ctx, const EValue& x, const Tensor& n, Tensor& out) { \
    scalar_first<kF32F64>(ctx, x, n, "n", out, Fn2<fn>{});                              \
  }
#define EMBER_POLY_N_SCALAR(kernel, fn)                                                 \
  void kernel##_out(KernelContext& ctx, const Tensor& x, const EValue& n, Tensor& out) { \
    scalar_second<kF32F64>(ctx, x, "x", n, out, Fn2<fn>{});                             \
  }

EMBER_POLY_TENSORS(special_chebyshev_polynomial_t, poly<cheb_t>)
EMBER_POLY_X_SCALAR(special_chebyshev_polynomial_t_x_scalar, poly<cheb_t>)
EMBER_POLY_N_SCALAR(special_chebyshev_polynomial_t_n_scalar, poly<cheb_t>)
EMBER_POLY_TENSORS(special_chebyshev_polynomial_u, poly<cheb_u>)
EMBER_POLY_X_SCALAR(special_chebyshev_polynomial_u_x_scalar, poly<cheb_u>)
EMBER_POLY_N_SCALAR(special_chebyshev_polynomial_u_n_scalar, poly<cheb_u>)
EMBER_POLY_TENSORS(special_chebyshev_polynomial_v, poly<cheb_v>)
EMBER_POLY_X_SCALAR(special_chebyshev_polynomial_v_x_scalar, poly<cheb_v>)
EMBER_POLY_N_SCALAR(special_chebyshev_polynomial_v_n_scalar, poly<cheb_v>)
EMBER_POLY_TENSORS(special_chebyshev_polynomial_w, poly<cheb_w>)
EMBER_POLY_X_SCALAR(special_chebyshev_polynomial_w_x_scalar, poly<cheb_w>)
EMBER_POLY_N_SCALAR(special_chebyshev_polynomial_w_n_scalar, poly<cheb_w>)
EMBER_POLY_TENSORS(special_shifted_chebyshev_polynomial_t, shifted_poly<cheb_t>)
EMBER_POLY_X_SCALAR(special_shifted_chebyshev_polynomial_t_x_scalar, shifted_poly<cheb_t>)
EMBER_POLY_N_SCALAR(special_shifted_chebyshev_polynomial_t_n_scalar, shifted_poly<cheb_t>)
EMBER_POLY_TENSORS(special_shifted_chebyshev_polynomial_u, shifted_poly<cheb_u>)
EMBER_POLY_X_SCALAR(special_shifted_chebyshev_polynomial_u_x_scalar, shifted_poly<cheb_u>)
EMBER_POLY_N_SCALAR(special_shifted_chebyshev_polynomial_u_n_scalar, shifted_poly<cheb_u>)
EMBER_POLY_TENSORS(special_shifted_chebyshev_polynomial_v, shifted_poly<cheb_v>)
EMBER_POLY_X_SCALAR(special_shifted_chebyshev_polynomial_v_x_scalar, shifted_poly<cheb_v>)
EMBER_POLY_N_SCALAR(special_shifted_chebyshev_polynomial_v_n_scalar, shifted_poly<cheb_v>)
EMBER_POLY_TENSORS(special_shifted_chebyshev_polynomial_w, shifted_poly<cheb_w>)
EMBER_POLY_X_SCALAR(special_shifted_chebyshev_polynomial_w_x_scalar, shifted_poly<cheb_w>)
EMBER_POLY_N_SCALAR(special_shifted_chebyshev_polynomial_w_n_scalar, shifted_poly<cheb_w>)
EMBER_POLY_TENSORS(special_hermite_polynomial_h, poly<hermite_h>)
EMBER_POLY_X_SCALAR(special_hermite_polynomial_h_x_scalar, poly<hermite_h>)
EMBER_POLY_N_SCALAR(special_hermite_polynomial_h_n_scalar, poly<hermite_h>)
EMBER_POLY_TENSORS(special_hermite_polynomial_he, poly<hermite_he>)
EMBER_POLY_X_SCALAR(special_hermite_polynomial_he_x_scalar, poly<hermite_he>)
EMBER_POLY_N_SCALAR(special_hermite_polynomial_he_n_scalar, poly<hermite_he>)
EMBER_POLY_TENSORS(special_laguerre_polynomial_l, poly<laguerre_l>)
EMBER_POLY_X_SCALAR(special_laguerre_polynomial_l_x_scalar, poly<laguerre_l>)
EMBER_POLY_N_SCALAR(special_laguerre_polynomial_l_n_scalar, poly<laguerre_l>)
EMBER_POLY_TENSORS(special_legendre_polynomial_p, poly<legendre_p>)
EMBER_POLY_X_SCALAR(special_legendre_polynomial_p_x_scalar, poly<legendre_p>)
EMBER_POLY_N_SCALAR(special_legendre_polynomial_p_n_scalar, poly<legendre_p>)

#undef EMBER_POLY_TENSORS
#undef EMBER_POLY_X_SCALAR
#undef EMBER_POLY_N_SCALAR

}  // namespace ember::kernels::portable
