// Binary math with broadcasting and type promotion:
//   aten::{maximum,minimum,atan2,fmax,fmin,hypot,nextafter,gcd}.out(Tensor self, Tensor other,
//       *, Tensor(a!) out)
//   aten::{fmod,remainder}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::{fmod,remainder}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//   aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out)
//   aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out)
//   aten::pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out)
// maximum/minimum: every dtype; NaN propagates (unlike fmax/fmin, every dtype).
// atan2: integral and bool inputs compute in float32. hypot: floating dtypes;
// nextafter: floating dtypes (16-bit ones step in their own grid); gcd: integral dtypes (non-negative results). fmod (sign of self) and remainder (sign
// of other): real dtypes, not bool; integer division by zero fails the kernel.
// pow: real dtypes after promotion, not bool (bool ** bool Scalar excepted,
// as eager); integers wrap, and an integer
// base to a negative integer exponent gives 1/base truncated (0 unless base
// is ±1) for tensor exponents and fails for a Scalar exponent, as eager.
#include <cmath>
#include <numeric>
#include <type_traits>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/binary_driver.h"
#include "kernels/portable/util/division.h"
#include "kernels/generated/functions/portable/op_binary_math.h"

namespace ember::kernels::portable {
namespace {

template <typename T>
inline T pow_int(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  T result = 1;
  while (exp != 0) {
    if (exp & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp = static_cast<T>(exp >> 1);
  }
  return result;
}

struct Pow {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsIntegerCompute<T>) return pow_int(a, b);
    else return std::pow(a, b);
  }
};

template <typename T>
inline bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

struct Maximum {
  template <typename T>
  T operator()(T a, T b) const { return (a > b || is_nan_value(a)) ? a : b; }
};
struct Minimum {
  template <typename T>
  T operator()(T a, T b) const { return (a < b || is_nan_value(a)) ? a : b; }
};
struct Atan2 {
  template <typename T>
  T operator()(T a, T b) const { return std::atan2(a, b); }
};
// fmax/fmin: a NaN operand yields the other one (NaN only when both are).
struct Fmax {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return std::fmax(a, b);
    else return a > b ? a : b;
  }
};
struct Fmin {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return std::fmin(a, b);
    else return a < b ? a : b;
  }
};
struct Hypot {
  template <typename T>
  T operator()(T a, T b) const { return std::hypot(a, b); }
};
struct Nextafter {
  template <typename T>
  T operator()(T a, T b) const { return std::nextafter(a, b); }
};
// nextafter in a 16-bit float S (float16 or bfloat16, both sign-magnitude):
// the neighbour in S's own grid, a step of its bit pattern.
template <typename S>
struct Nextafter16 {
  template <typename T>
  T operator()(T a, T b) const {
    if (std::isnan(a) || std::isnan(b)) return a + b;
    if (a == b) return b;
    uint16_t bits = convert<S>(a).bits;
    if (a == 0) {
      bits = b > 0 ? 0x0001 : 0x8001;  // the smallest subnormal towards b
    } else if ((a < b) == (a > 0)) {
      ++bits;
    } else {
      --bits;
    }
    S r;
    r.bits = bits;
    return convert<T>(r);
  }
};
struct Gcd {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(std::gcd(a, b));
    else return a;  // not instantiated: gcd takes integral dtypes only
  }
};

template <bool kFloor>
struct Mod {
  bool* zero;
  template <typename T>
  T operator()(T a, T b) const {
    return kFloor ? mod_floor(a, b, *zero) : mod_trunc(a, b, *zero);
  }
};

// fmod and remainder, `other` a Tensor or a Scalar (EValue). The op sets
// `zero` on an integer division by zero; the kernel then fails.
template <bool kFloor, typename Other>
void fmod_remainder(KernelContext& ctx, const Tensor& self, const Other& other, Tensor& out) {
  bool zero = false;
  if constexpr (std::is_same_v<Other, Tensor>) {
    binary_tensor_out<kRealTypes, false>(ctx, self, other, out, Mod<kFloor>{&zero});
  } else {
    binary_scalar_out<kRealTypes>(ctx, self, other, out, Mod<kFloor>{&zero});
  }
  if (zero && ctx.failure() == Error::Ok) {
    ctx.fail(Error::InvalidArgument, "other: integer division by zero");
  }
}

}  // namespace

void maximum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kAllTypes, false>(ctx, self, other, out, Maximum{});
}
void minimum_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kAllTypes, false>(ctx, self, other, out, Minimum{});
}
void atan2_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kFloating, true>(ctx, self, other, out, Atan2{});
}
void fmax_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kAllTypes, false>(ctx, self, other, out, Fmax{});
}
void fmin_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kAllTypes, false>(ctx, self, other, out, Fmin{});
}
void hypot_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kFloating, false>(ctx, self, other, out, Hypot{});
}
// 16-bit results step in their own grid, not float's.
void nextafter_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  if (out.dtype == ScalarType::Half) {
    binary_tensor_out<kHalfBF16, false>(ctx, self, other, out, Nextafter16<Half>{});
  } else if (out.dtype == ScalarType::BFloat16) {
    binary_tensor_out<kHalfBF16, false>(ctx, self, other, out, Nextafter16<BFloat16>{});
  } else {
    binary_tensor_out<kF32F64, false>(ctx, self, other, out, Nextafter{});
  }
}
void gcd_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kIntegral, false>(ctx, self, other, out, Gcd{});
}
void fmod_Tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  fmod_remainder<false>(ctx, self, other, out);
}
void fmod_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other, Tensor& out) {
  fmod_remainder<false>(ctx, self, other, out);
}
void remainder_Tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other,
                          Tensor& out) {
  fmod_remainder<true>(ctx, self, other, out);
}
void remainder_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other,
                          Tensor& out) {
  fmod_remainder<true>(ctx, self, other, out);
}
void pow_Tensor_Tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& exponent,
                           Tensor& out) {
  // A 0-dim exponent (to_edge makes scalars tensors: RMS norm's x ** 2,
  // GPT-2's GELU x ** 3) takes the Scalar form: 2, 3, -1 and -2 as products
  // and a division, as eager computes x ** 2 and x ** 3 with the model's
  // Python number, vectorised (std::pow per element was a fifth of GPT-2's
  // time); others as std::pow with the exponent rounded to self's dtype, as
  // eager. Not 0.5, which the Scalar form takes as sqrt (eager's tensor
  // exponent follows pow at -inf and -0). A floating self keeps its dtype
  // against any 0-dim exponent, as with a Scalar.
  if (exponent.dim == 0 && is_floating_type(self.dtype) && exponent.dtype != ScalarType::Bool) {
    const double v = load_as<double>(exponent.data, exponent.dtype, 0);
    if (v != 0.5) {
      EValue e;
      e.tag = Tag::Double;
      e.as_double = v;
      pow_Tensor_Scalar_out(ctx, self, e, out);
      return;
    }
  }
  binary_tensor_out<kRealTypes, false>(ctx, self, exponent, out, Pow{});
}

void pow_Tensor_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& exponent,
                           Tensor& out) {
  const ScalarType common = prepare_tensor_scalar(ctx, self, "self", exponent, out, false);
  if (common == kUndefinedDtype) return;
  EMBER_KERNEL_CHECK(ctx, is_floating_type(common) || exponent.scalar_as_double() >= 0,
                     "exponent: integers to negative integer powers are not allowed (dtype %s)",
                     scalar_type_name(common));
  // Eager allows bool ** bool here: x ** True = x, x ** False = True.
  if (common == ScalarType::Bool) {
    const bool e = exponent.scalar_as_int() != 0;
    apply_unary<BoolByte>(self, out, [e](bool x) { return e ? x : true; });
    return;
  }
  const bool ok = dispatch_dtype<kRealTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    // The exponent in self's dtype, as eager rounds it (x ** 1.7 on bfloat16
    // raises to 1.703125); a no-op for float, double and integers.
    const CT e = static_cast<CT>(static_cast<S>(scalar_as<CT>(exponent)));
    if constexpr (kIsIntegerCompute<CT>) {
      apply_unary<S>(self, out, [e](CT x) { return pow_int(x, e); });
    } else if (e == CT(2)) {
      apply_unary<S>(self, out, [](CT x) { return x * x; });  // Exact, and vectorises.
    } else if (e == CT(3)) {
      // Eager's own forms for these exponents (its pow's scalar fast paths).
      apply_unary<S>(self, out, [](CT x) { return x * x * x; });
    } else if (e == CT(0.5) && std::is_same_v<S, CT>) {
      // Eager's float and double x ** 0.5 is sqrt ((-inf) ** 0.5 = NaN); its
      // 16-bit types and tensor exponents follow pow (inf there).
      apply_unary<S>(self, out, [](CT x) { return std::sqrt(x); });
    } else if (e == CT(-1)) {
      apply_unary<S>(self, out, [](CT x) { return CT(1) / x; });
    } else if (e == CT(-2)) {
      apply_unary<S>(self, out, [](CT x) { return CT(1) / (x * x); });
    } else {
      apply_unary<S>(self, out, [e](CT x) { return std::pow(x, e); });
    }
  });
  if (!ok) fail_dtype(ctx, "self/exponent (promoted)", common);
}

void pow_Scalar_out(KernelContext& ctx, const EValue& self, const Tensor& exponent, Tensor& out) {
  const ScalarType common = prepare_tensor_scalar(ctx, exponent, "exponent", self, out, false);
  if (common == kUndefinedDtype) return;
  if (!apply_with_scalar<kRealTypes, true>(exponent, self, out, common, Pow{})) {
    fail_dtype(ctx, "self/exponent (promoted)", common);
  }
}

}  // namespace ember::kernels::portable
