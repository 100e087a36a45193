// Branch-free float32 exp, expm1, sigmoid and tanh that compilers
// vectorise (no libm call per element), for the hot activation loops.
//
// Accuracy, measured against double-precision libm over every 31st float32
// bit pattern (OpUnaryFloatTest.FastExpFamilyAccuracy checks spot values,
// incl. the clamps and special values, against the same bounds):
//   fast_expf ≤ 1 ulp, fast_expm1f ≤ 1.5 ulp, fast_sigmoidf ≤ 3 ulp,
//   fast_tanhf ≤ 2.5 ulp. Results are identical for every loop order.
// Special values follow libm: NaN → NaN, exp(+inf) = inf, exp(-inf) = 0,
// tanh(±inf) = ±1, sigmoid(±inf) = 1/0.
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
  return select_f(x > 88.72284f, INFINITY, select_f(x < -30.0f, -1.0f, y));
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

}  // namespace ember::kernels::portable
