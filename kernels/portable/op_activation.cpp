// Pointwise activations:
//   aten::elu.out(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *,
//                 Tensor(a!) out)
//   aten::gelu.out(Tensor self, *, str approximate="none", Tensor(a!) out)
//   aten::hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out)
//   aten::leaky_relu.out(Tensor self, Scalar negative_slope=0.01, *, Tensor(a!) out)
// elu, gelu and leaky_relu take floating dtypes only (as eager); hardtanh
// takes real dtypes but not bool, and no negative limits for uint8. NaN
// propagates. float32 elu and gelu use the vectorisable polynomials of
// fast_math.h (gelu(none) its erf); float32 gelu on tensors with one layout
// runs through unary_f32 (AVX2 where the CPU has it).
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_activation.h"

namespace ember::kernels::portable {
namespace {

template <typename T>
inline T expm1_any(T x) {
  if constexpr (std::is_same_v<T, float>) return fast_expm1f(x);
  else return std::expm1(x);
}

// A Scalar argument's scalar_as<T> for every T, computed once.
struct ScalarLimit {
  int64_t i;
  double d;
  template <typename T>
  T as() const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(i);
    } else {
      return static_cast<T>(d);
    }
  }
};

}  // namespace

void elu_out(KernelContext& ctx, const Tensor& self, const EValue& alpha, const EValue& scale,
             const EValue& input_scale, Tensor& out) {
  const double neg_coef = alpha.scalar_as_double() * scale.scalar_as_double();
  const double pos_coef = scale.scalar_as_double();
  const double in_coef = input_scale.scalar_as_double();
  run_unary_op<kFloating, false>(ctx, self, out, [=](auto x) {
    using T = decltype(x);
    return x <= T(0) ? expm1_any(x * T(in_coef)) * T(neg_coef) : x * T(pos_coef);
  });
}

void gelu_out(KernelContext& ctx, const Tensor& self, std::string_view mode, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, mode == "none" || mode == "tanh",
                     "approximate: must be 'none' or 'tanh', got '%.*s'",
                     static_cast<int>(mode.size()), mode.data());
  if (mode == "tanh") {
    run_unary_op<kFloating, false>(ctx, self, out, UnaryF32::GeluTanh, [](auto x) {
      using T = decltype(x);
      if constexpr (std::is_same_v<T, float>) {
        return fast_gelu_tanhf(x);
      } else {
        constexpr T kBeta = T(0.7978845608028654);  // sqrt(2 / pi)
        constexpr T kKappa = T(0.044715);
        const T inner = kBeta * (x + kKappa * x * x * x);
        if (x == -std::numeric_limits<T>::infinity()) return T(-0.0);  // the limit, not NaN
        return T(0.5) * x * (T(1) + std::tanh(inner));
      }
    });
  } else {
    run_unary_op<kFloating, false>(ctx, self, out, UnaryF32::GeluErf, [](auto x) {
      using T = decltype(x);
      if constexpr (std::is_same_v<T, float>) {
        return fast_gelu_erff(x);
      } else {
        constexpr T kRsqrt2 = T(0.7071067811865476);
        if (x == -std::numeric_limits<T>::infinity()) return T(-0.0);  // the limit, not NaN
        return T(0.5) * x * (T(1) + std::erf(x * kRsqrt2));
      }
    });
  }
}

void hardtanh_out(KernelContext& ctx, const Tensor& self, const EValue& min_val,
                  const EValue& max_val, Tensor& out) {
  const EValue* lo = &min_val;
  const EValue* hi = &max_val;
  EMBER_KERNEL_CHECK(ctx, self.dtype != ScalarType::Bool, "self: unsupported dtype bool");
  EMBER_KERNEL_CHECK(ctx,
                     self.dtype != ScalarType::Byte ||
                         (lo->scalar_as_double() >= 0 && hi->scalar_as_double() >= 0),
                     "min_val/max_val: negative limits on an unsigned (uint8) tensor");
  // The limits are converted once, outside the per-element lambda: a
  // scalar_as<T>(EValue) call per element kept the loop from inlining and
  // vectorising (half of MobileNetV2's portable time).
  const ScalarLimit l{lo->scalar_as_int(), lo->scalar_as_double()};
  const ScalarLimit h{hi->scalar_as_int(), hi->scalar_as_double()};
  run_unary_op<kRealTypes, false>(ctx, self, out, [l, h](auto x) {
    using T = decltype(x);
    const T lv = l.template as<T>();
    const T hv = h.template as<T>();
    return x < lv ? lv : (x > hv ? hv : x);
  });
}

void leaky_relu_out(KernelContext& ctx, const Tensor& self, const EValue& negative_slope,
                    Tensor& out) {
  const double s = negative_slope.scalar_as_double();
  run_unary_op<kFloating, false>(ctx, self, out, [s](auto x) {
    using T = decltype(x);
    return x > T(0) ? x : x * T(s);
  });
}

}  // namespace ember::kernels::portable
