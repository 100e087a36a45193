// A weight-only linear problem for the int4 tests (qweight_int4_test.cpp,
// qweight_int4_fixed_test.cpp): random integer weights in [lo, hi], group
// scales, optional zero points and bias, input rows; and eager's result in
// float64 with Σ |x·W| per output (the scale tolerances are relative to).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ember::kernels::quantized::qweight_test {

struct Problem {
  int64_t n, k, group;
  std::vector<int8_t> w;
  std::vector<float> scales, zeros, bias, x;
};

inline Problem make_problem(int64_t n, int64_t k, int64_t group, int64_t rows, bool with_zeros,
                            bool with_bias, uint32_t seed, int lo = -8, int hi = 7) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> wd(lo, hi), zd(-3, 3);
  std::uniform_real_distribution<float> xd(-2.0f, 2.0f), sd(0.005f, 0.05f);
  Problem p{n, k, group, {}, {}, {}, {}, {}};
  const int64_t groups = k / group;
  for (int64_t i = 0; i < n * k; ++i) p.w.push_back(static_cast<int8_t>(wd(rng)));
  for (int64_t i = 0; i < n * groups; ++i) p.scales.push_back(sd(rng));
  if (with_zeros) {
    for (int64_t i = 0; i < n * groups; ++i) p.zeros.push_back(static_cast<float>(zd(rng)));
  }
  if (with_bias) {
    for (int64_t i = 0; i < n; ++i) p.bias.push_back(xd(rng));
  }
  for (int64_t i = 0; i < rows * k; ++i) p.x.push_back(xd(rng));
  return p;
}

// y[m][r] in float64, and Σ |x·W| (the bound's scale).
inline void reference(const Problem& p, int64_t rows, std::vector<double>& y,
                      std::vector<double>& mag) {
  const int64_t groups = p.k / p.group;
  y.assign(static_cast<size_t>(rows * p.n), 0.0);
  mag.assign(y.size(), 0.0);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t r = 0; r < p.n; ++r) {
      double s = p.bias.empty() ? 0.0 : p.bias[r], a = 0.0;
      for (int64_t i = 0; i < p.k; ++i) {
        const int64_t g = r * groups + i / p.group;
        const double z = p.zeros.empty() ? 0.0 : p.zeros[g];
        const double v = p.x[m * p.k + i] * ((p.w[r * p.k + i] - z) * p.scales[g]);
        s += v;
        a += std::fabs(v);
      }
      y[m * p.n + r] = s;
      mag[m * p.n + r] = a;
    }
  }
}

}  // namespace ember::kernels::quantized::qweight_test
