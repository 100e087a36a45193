// choose_qparams_f32 (qparams.h) on the ISA path cpu_isa() picks (the suite
// runs under EMBER_ISA=baseline, avx2 and the host's best): the vectorised
// range scans must give the scalar rule's parameters, NaN handling included.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/quantized/util/qparams.h"

namespace ember::kernels::quantized {
namespace {

void reference(const std::vector<float>& x, float* scale, int64_t* zp) {
  float lo = x[0], hi = x[0];
  for (float v : x) {
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  const float mn = lo < 0.0f ? lo : 0.0f, mx = hi > 0.0f ? hi : 0.0f;
  float s = (mx - mn) / 255.0f;
  s = s > 1e-7f ? s : 1e-7f;
  int64_t z = -128 - static_cast<int32_t>(std::nearbyint(mn / s));
  *scale = s;
  *zp = z < -128 ? -128 : (z > 127 ? 127 : z);
}

TEST(ChooseQparamsF32Test, MatchesTheScalarRuleAtEveryLength) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-3.0f, 5.0f);
  for (int n : {1, 2, 15, 16, 17, 31, 32, 33, 64, 100, 1000, 4099}) {
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = u(rng);
      // The extremes at the last element, where only the scalar tail sees them.
      if (variant == 1) x.back() = -40.0f;
      if (variant == 2 && n > 1) x[static_cast<size_t>(n / 2)] = std::numeric_limits<float>::quiet_NaN();
      float s, want_s;
      int64_t z, want_z;
      choose_qparams_f32(x.data(), n, -128, 127, 1e-7, &s, &z);
      reference(x, &want_s, &want_z);
      EXPECT_EQ(s, want_s) << "n " << n << " variant " << variant;
      EXPECT_EQ(z, want_z) << "n " << n << " variant " << variant;
    }
  }
}

TEST(ChooseQparamsF32Test, ANaNFirstValueStays) {
  std::vector<float> x(40, 1.0f);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  float s;
  int64_t z;
  choose_qparams_f32(x.data(), 40, -128, 127, 1e-7, &s, &z);
  float want_s;
  int64_t want_z;
  reference(x, &want_s, &want_z);
  EXPECT_EQ(std::isnan(s), std::isnan(want_s));
  EXPECT_EQ(z, want_z);
}

TEST(QuantizeF32S8Test, MatchesRequantizeOnSpecialValuesAndTails) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-300.0f, 300.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.5f, 1.5f, -2.5f, 1e30f,
                            -1e30f, 0.0f, -0.0f};
  for (int n : {1, 7, 16, 17, 100, 1000}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = u(rng);
    for (int i = 0; i < n && i < 10; ++i) x[static_cast<size_t>(i * 7 % n)] = specials[i];
    for (const auto& [inv, lo, hi, zp] :
         {std::tuple{1.0f, -128.0f - 3, 127.0f - 3, 3}, std::tuple{0.37f, 0.0f + 5, 127.0f + 5, -5}}) {
      std::vector<int8_t> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
      quantize_f32_s8(x.data(), got.data(), n, inv, lo, hi, zp);
      for (int i = 0; i < n; ++i) {
        const float v = x[static_cast<size_t>(i)] * inv;
        want[static_cast<size_t>(i)] = requantize(v != v ? 0.0f : v, lo, hi, zp);
      }
      EXPECT_EQ(got, want) << "n " << n << " zp " << zp;
    }
  }
}

}  // namespace
}  // namespace ember::kernels::quantized
