// Branch-free float32 exp, expm1, sigmoid, tanh, erf and the two GELUs that
// compilers vectorise (no libm call per element), for the hot activation loops.
//
// Accuracy, measured against double-precision libm over every 31st float32
// bit pattern (OpUnaryFloatTest.FastExpFamilyAccuracy checks spot values,
// incl. the clamps and special values, against the same bounds):
//   fast_expf ≤ 1 ulp, fast_expm1f ≤ 1.5 ulp, fast_sigmoidf ≤ 3 ulp,
//   fast_tanhf ≤ 2.5 ulp, fast_erff ≤ 1.5 ulp (1.03 measured).
// FastMathTest.UnarySweepWithinUlpBounds sweeps every 4099th bit pattern
// through both builds of unary_f32.h against these bounds. The AVX2 build
// fuses multiply-adds, so its results can differ from the baseline build's
// (and from a strided loop's) by an ulp, within the same bounds.
// Special values follow libm and IEEE 754 (docs/special-values.md lists them
// per op): NaN → NaN, exp(+inf) = inf, exp(-inf) = 0, tanh(±inf) = ±1,
// sigmoid(±inf) = 1/0, erf(±inf) = ±1; expm1, tanh, erf and gelu keep the
// sign of ±0; gelu(+inf) = inf and gelu(-inf) = -0 (the limit).
// Always inlined: a call left in a loop (GCC stops inlining in large kernel
// files) would stop vectorisation.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace ember::kernels::portable {

namespace fast_math_detail {

// ln 2 split in two: kLn2Hi has its low bits zero, so n * kLn2Hi is exact.
inline constexpr float kLn2Hi = 0.693145751953125f;
inline constexpr float kLn2Lo = 1.42860682030941723212e-6f;
inline constexpr float kInvLn2 = 1.44269504088896341f;

// Round to nearest integer for |v| < 2^22 without a libm call (nearbyint is
// one on plain SSE2): adding 1.5·2^23 pushes the fraction out of the mantissa.
[[gnu::always_inline]] inline float round_small(float v) { return (v + 12582912.0f) - 12582912.0f; }

// c ? a : b through bit masks. GCC (with the default -ftrapping-math) does
// not if-convert a float `?:` whose arms it could otherwise skip, which stops
// vectorisation; an integer select it does.
[[gnu::always_inline]] inline float select_f(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// 2^n for integer n in [-126, 127], built from the exponent bits.
[[gnu::always_inline]] inline float pow2i(int32_t n) {
  return std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23);
}

// expm1(r) for |r| ≤ ln2/2: Taylor series to r^8 (truncation < 1e-10 relative).
[[gnu::always_inline]] inline float expm1_reduced(float r) {
  float p = 1.0f / 40320.0f;
  p = p * r + 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  return r + (r * r) * p;
}

// e^v for v in [-18, -1.8], the exponents erf's tail needs: no clamps, one
// scaling, and a degree-5 minimax polynomial (7.5e-8 relative; erf scales
// that by erfc ≤ 0.16). About half the instructions of fast_expf.
[[gnu::always_inline]] inline float exp_erfc_range(float v) {
  const float nf = round_small(v * kInvLn2);
  const float r = (v - nf * kLn2Hi) - nf * kLn2Lo;
  float p = 8.297652006e-03f;
  p = p * r + 4.191538319e-02f;
  p = p * r + 1.666757464e-01f;
  p = p * r + 4.999889433e-01f;
  p = p * r + 9.999997020e-01f;
  p = p * r + 1.000000119e+00f;
  return p * pow2i(static_cast<int32_t>(nf));
}

}  // namespace fast_math_detail

/// e^x in float32.
[[gnu::always_inline]] inline float fast_expf(float x) {
  using namespace fast_math_detail;
  // Clamp so the reduction stays finite; results outside are fixed below.
  const float xc = select_f(x < -104.0f, -104.0f, select_f(x > 88.8f, 88.8f, x));
  const float nf = round_small(xc * kInvLn2);
  const int32_t n = static_cast<int32_t>(nf);
  const float r = (xc - nf * kLn2Hi) - nf * kLn2Lo;
  const float er = expm1_reduced(r) + 1.0f;
  // Split 2^n in two factors so subnormal results and n = 128 stay exact.
  const int32_t n1 = n / 2;
  const float y = er * pow2i(n1) * pow2i(n - n1);
  return select_f(x > 88.72284f, INFINITY, select_f(x < -103.97209f, 0.0f, y));
}

/// e^x, but 0 where e^x is below the normal range (x < -87): for softmax
/// terms (x = score − row maximum), where such a term is 1e-38 of the largest
/// and computing a subnormal costs the core a microcode assist on every lane
/// that produces one (a masked score's −inf among them: fast_expf clamps it
/// to −104 and builds a subnormal it then discards). NaN stays NaN.
[[gnu::always_inline]] inline float fast_exp_or_zero(float x) {
  using fast_math_detail::select_f;
  const bool tiny = x < -87.0f;
  return select_f(tiny, 0.0f, fast_expf(select_f(tiny, -87.0f, x)));
}

/// e^x - 1 in float32, accurate near 0.
[[gnu::always_inline]] inline float fast_expm1f(float x) {
  using namespace fast_math_detail;
  const float xc = select_f(x < -30.0f, -30.0f, select_f(x > 88.8f, 88.8f, x));
  const float nf = round_small(xc * kInvLn2);
  const int32_t n = static_cast<int32_t>(nf);
  const float r = (xc - nf * kLn2Hi) - nf * kLn2Lo;
  const float p = expm1_reduced(r);
  // e^x - 1 = 2^n p + (2^n - 1) keeps the precision of p near 0. From
  // n = 25 on the -1 is below half an ulp, and 2^n (p + 1) in two factors
  // also covers n = 128.
  const int32_t n1 = n / 2;
  const float big = (p + 1.0f) * pow2i(n1) * pow2i(n - n1);
  const float s = pow2i(n > 25 ? 25 : n);
  const float small = s * p + (s - 1.0f);
  const float y = select_f(n > 24, big, small);
  // Below 2^-25 in magnitude e^x - 1 rounds to x itself; taking x keeps the
  // sign of -0 (IEEE: expm1(-0) = -0) and the subnormals exact.
  const float r0 = select_f(std::fabs(x) < 0x1p-25f, x, y);
  return select_f(x > 88.72284f, INFINITY, select_f(x < -30.0f, -1.0f, r0));
}

/// 1 / (1 + e^-x) in float32, as e^x / (1 + e^x) for x < 0 so tiny results
/// keep their precision instead of flushing when e^-x overflows.
[[gnu::always_inline]] inline float fast_sigmoidf(float x) {
  using fast_math_detail::select_f;
  const float e = fast_expf(-std::fabs(x));
  const float r = 1.0f / (1.0f + e);
  return select_f(x >= 0.0f, r, e * r);  // NaN propagates through e.
}

/// tanh(x) in float32, as expm1(2x) / (expm1(2x) + 2) (no cancellation near 0).
[[gnu::always_inline]] inline float fast_tanhf(float x) {
  using fast_math_detail::select_f;
  // tanh(9) rounds to 1 in float32.
  const float xc = select_f(x < -9.0f, -9.0f, select_f(x > 9.0f, 9.0f, x));
  const float e = fast_expm1f(2.0f * xc);
  return e / (e + 2.0f);
}

/// erf(x) in float32. |x| < 1: x + x·A(x²) (A = erf(x)/x - 1, a minimax fit;
/// adding x last keeps the result within an ulp). 1 ≤ |x| ≤ 4:
/// 1 - e^(B(|x| - 2.5) - x²) with B ≈ log(erfc(x)·e^(x²)), smooth on [1, 4]
/// (erfc ≤ 0.16 there, so the exp's rounding barely reaches the sum). From
/// |x| = 3.92 on erf rounds to ±1; the clamp at 4 gives exactly that.
/// Coefficients: Lawson-weighted least squares against mpmath, degree 6 in x²
/// and 8 in |x| - 2.5.
[[gnu::always_inline]] inline float fast_erff(float x) {
  using fast_math_detail::select_f;
  const float a = std::fabs(x);
  const float ac = select_f(a > 4.0f, 4.0f, a);  // NaN stays NaN.
  const float t = ac * ac;
  float p = 7.853857824e-05f;
  p = p * t - 8.010192541e-04f;
  p = p * t + 5.188327748e-03f;
  p = p * t - 2.685381100e-02f;
  p = p * t + 1.128358543e-01f;
  p = p * t - 3.761262596e-01f;
  p = p * t + 1.283791661e-01f;
  const float small = ac + ac * p;
  // Lanes below 1 take `small`; lifting them to 1 keeps the exponent below in
  // exp_erfc_range's domain (NaN stays NaN).
  const float ab = select_f(ac < 1.0f, 1.0f, ac);
  const float u = ab - 2.5f;
  float q = 1.599819143e-06f;
  q = q * u - 1.330170926e-05f;
  q = q * u + 7.745491894e-05f;
  q = q * u - 4.201731354e-04f;
  q = q * u + 2.165081445e-03f;
  q = q * u - 1.085848734e-02f;
  q = q * u + 5.610639229e-02f;
  q = q * u - 3.526806831e-01f;
  q = q * u - 1.556815267e+00f;
  const float big = 1.0f - fast_math_detail::exp_erfc_range(q - ab * ab);
  return std::copysign(select_f(ac < 1.0f, small, big), x);
}

/// gelu(x) = x/2 · (1 + erf(x/√2)), PyTorch's approximate="none".
/// gelu(-inf) is the limit, -0 (x · Φ(x) would be -inf · 0 = NaN).
[[gnu::always_inline]] inline float fast_gelu_erff(float x) {
  const float y = 0.5f * x * (1.0f + fast_erff(x * 0.70710678118654752f));
  return fast_math_detail::select_f(x == -INFINITY, -0.0f, y);
}

/// gelu(x) with approximate="tanh": x/2 · (1 + tanh(z)), z = √(2/π)(x + 0.044715x³),
/// computed as x · sigmoid(2z) (the same value; one exp and one divide instead
/// of expm1, and no cancellation in 1 + tanh for negative x).
[[gnu::always_inline]] inline float fast_gelu_tanhf(float x) {
  constexpr float kTwoBeta = 2.0f * 0.7978845608028654f;
  const float z2 = kTwoBeta * (x + 0.044715f * x * x * x);
  return fast_math_detail::select_f(x == -INFINITY, -0.0f, x * fast_sigmoidf(z2));
}

}  // namespace ember::kernels::portable
