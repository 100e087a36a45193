// The float32 span loops of unary_f32.h and softmax_f32.h, called directly in
// both builds (baseline and, on CPUs with AVX2+FMA, the AVX2 one): a sweep
// over float32 bit patterns (normal, subnormal, huge, special) against
// double-precision references with each function's ulp bound, and softmax /
// log-softmax on rows and column blocks with -inf, NaN, +inf and large values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/softmax_f32.h"
#include "kernels/portable/util/unary_f32.h"

namespace ember::kernels::portable {
namespace {

// One build of the span loops: the ISA level it was compiled for.
struct Build {
  Isa isa;
  void operator()(UnaryF32 op, const float* x, float* y, int64_t n) const {
    unary_f32_at(isa, op, x, y, n);
  }
  void operator()(bool log, const float* in, float* out, int64_t outer, int64_t n,
                  int64_t inner) const {
    softmax_f32_at(isa, log, in, out, outer, n, inner);
  }
  const char* name() const { return isa_name(isa); }
};

// The builds this CPU runs (whatever EMBER_ISA says: each is called directly).
std::vector<Build> isa_builds() {
  std::vector<Build> b = {{Isa::kBaseline}};
  if (host_isa() >= Isa::kAvx2) b.push_back({Isa::kAvx2});
  if (host_isa() >= Isa::kAvx512) b.push_back({Isa::kAvx512});
  return b;
}
std::vector<Build> unary_builds() { return isa_builds(); }
std::vector<Build> softmax_builds() { return isa_builds(); }

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Every 4099th bit pattern (both signs, subnormals to inf and NaN) plus
// values where the implementations switch formulas or clamp.
std::vector<float> sweep_inputs() {
  std::vector<float> xs;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) {
    xs.push_back(from_bits(static_cast<uint32_t>(u)));
  }
  const float edges[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, -1e-40f, 1.17549435e-38f,
                         1e-8f, 0.5f, 0.99999994f, 1.0f, 1.0000001f, 1.4142135f, 2.5f,
                         3.92f, 4.0f, 4.0000005f, 9.0f, 20.0f, 88.72283f, 88.72284f, 88.8f,
                         89.0f, 103.97208f, 103.97209f, 104.0f, 1e30f,
                         std::numeric_limits<float>::max(), INFINITY, NAN};
  for (float e : edges) {
    xs.push_back(e);
    xs.push_back(-e);
  }
  return xs;
}

// gelu(-inf) is the limit, -0 (docs/special-values.md), not -inf · 0.
double gelu_ref(double x) {
  return x == -INFINITY ? -0.0 : 0.5 * x * (1 + std::erf(x * 0.70710678118654752));
}

// 2z of gelu(tanh): 0.5x(1 + tanh(z)) = x·sigmoid(2z), which double
// evaluates without cancellation for x < 0.
double gelu_tanh_2z(double x) { return 2 * 0.7978845608028654 * (x + 0.044715 * x * x * x); }
double gelu_tanh_ref(double x) {
  return x == -INFINITY ? -0.0 : x / (1 + std::exp(-gelu_tanh_2z(x)));
}

struct Case {
  UnaryF32 op;
  const char* name;
  double (*ref)(double);
  double ulps;  // Bound in ulps of the float result, plus `extra` when set.
  double (*extra)(double x, double want);
};

const Case kCases[] = {
    {UnaryF32::Exp, "exp", [](double x) { return std::exp(x); }, 1, nullptr},
    {UnaryF32::Expm1, "expm1", [](double x) { return std::expm1(x); }, 1.5, nullptr},
    {UnaryF32::Sigmoid, "sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, 3, nullptr},
    {UnaryF32::Tanh, "tanh", [](double x) { return std::tanh(x); }, 2.5, nullptr},
    {UnaryF32::Erf, "erf", [](double x) { return std::erf(x); }, 1.5, nullptr},
    // 1 + erf(x/√2) cancels for x < 0 (as in eager): the absolute error of
    // erf near -1 (1.5 ulp of 1) times |x|/2.
    {UnaryF32::GeluErf, "gelu", gelu_ref, 3, [](double x, double) { return 6e-8 * std::fabs(x); }},
    // x·sigmoid(2z): sigmoid's 3 ulp, and float rounds 2z = 2β(x + κx³) by a
    // few ulp, which moves sigmoid(2z) by that much times (1 - sigmoid),
    // relative (eager's 1 + tanh(z) loses all digits there instead). A
    // subnormal sigmoid's rounding is multiplied by |x|.
    {UnaryF32::GeluTanh, "gelu_tanh", gelu_tanh_ref, 3,
     [](double x, double want) {
       return std::fabs(want * gelu_tanh_2z(x)) * 4e-7 + std::fabs(x) * 1.5e-45;
     }},
};

TEST(FastMathTest, UnarySweepWithinUlpBounds) {
  const std::vector<float> xs = sweep_inputs();
  std::vector<float> ys(xs.size());
  for (const Build& fn : unary_builds()) {
    const std::string build_name = std::string(" ") + fn.name();
    const char* build = build_name.c_str();
    for (const Case& c : kCases) {
      fn(c.op, xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
      double worst = 0;
      float worst_x = 0;
      int failures = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double want = c.ref(xs[i]);
        const float got = ys[i];
        if (std::isnan(want)) {
          if (!std::isnan(got) && failures++ < 5) {
            ADD_FAILURE() << c.name << build << "(" << xs[i] << ") = " << got
                          << ", want NaN";
          }
          continue;
        }
        const float wf = static_cast<float>(want);
        if (std::isinf(wf)) {
          if (got != wf && failures++ < 5) {
            ADD_FAILURE() << c.name << build << "(" << xs[i] << ") = " << got
                          << ", want " << wf;
          }
          continue;
        }
        if (got == want) continue;  // exact (also where `extra` has no finite value)
        const double ulp = std::nextafter(std::fabs(wf), INFINITY) - std::fabs(wf);
        const double err = std::fabs(got - want);
        const double allowed = c.ulps * ulp + (c.extra ? c.extra(xs[i], want) : 0.0);
        if (!(err <= allowed) && failures++ < 5) {
          ADD_FAILURE() << c.name << build << "(" << xs[i] << ") = " << got
                        << ", want " << want << " (" << err / ulp << " ulp)";
        }
        if (c.extra == nullptr && err / ulp > worst) {
          worst = err / ulp;
          worst_x = xs[i];
        }
      }
      if (c.extra == nullptr) {
        RecordProperty(std::string(c.name) + "_" + fn.name() + "_max_ulp",
                       std::to_string(worst) + " at " + std::to_string(worst_x));
        if (std::getenv("EMBER_PRINT_ULPS")) {
          std::printf("%s %s: max %.2f ulp at %g\n", c.name, fn.name(), worst,
                      double(worst_x));
        }
      }
    }
  }
}

TEST(FastMathTest, UnaryInPlaceAndOddLengths) {
  for (const Build& fn : unary_builds()) {
    for (int64_t n : {0, 1, 7, 8, 9, 31, 33}) {
      std::vector<float> x(n), y(n);
      for (int64_t i = 0; i < n; ++i) x[i] = 0.37f * static_cast<float>(i) - 3.0f;
      fn(UnaryF32::Sigmoid, x.data(), y.data(), n);
      fn(UnaryF32::Sigmoid, x.data(), x.data(), n);  // In place.
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(x[i], y[i]) << n << " " << i;
    }
  }
}

// Softmax of one slice in double; log-softmax when `log`.
std::vector<double> softmax_ref(const std::vector<float>& v, bool log) {
  double mx = -INFINITY;
  for (float x : v) mx = std::isnan(x) || std::isnan(mx) ? NAN : std::max(mx, double(x));
  double sum = 0;
  for (float x : v) sum += std::exp(double(x) - mx);
  std::vector<double> r;
  for (float x : v) r.push_back(log ? (x - mx) - std::log(sum) : std::exp(x - mx) / sum);
  return r;
}

TEST(FastMathTest, SoftmaxRowsAndColumnsMatchDouble) {
  struct Shape {
    int64_t outer, n, inner;
  };
  // Rows (inner 1) shorter and longer than the 16 lanes; column blocks below,
  // at and across the 64-column block.
  const Shape shapes[] = {{3, 1, 1},  {2, 5, 1},  {2, 16, 1},  {3, 37, 1},  {1, 1000, 1},
                          {2, 1, 5},  {2, 7, 3},  {3, 9, 64},  {2, 5, 130}, {1, 33, 65}};
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-30, 30);
  for (const Build& fn : softmax_builds()) {
    for (const Shape& s : shapes) {
      const int64_t total = s.outer * s.n * s.inner;
      std::vector<float> in(total);
      for (float& x : in) x = dist(gen);
      // Slice (o, j) = elements o·n·inner + i·inner + j. Make slice 0 partly
      // -inf, slice 1 all -inf (NaN out, as eager), slice 2 hold a NaN, slice 3
      // a +inf (NaN out), slice 4 huge values (stable only with the max).
      const int64_t slices = s.outer * s.inner;
      auto at = [&](int64_t slice, int64_t i) -> float& {
        return in[(slice / s.inner) * s.n * s.inner + i * s.inner + slice % s.inner];
      };
      for (int64_t i = 0; i < s.n; i += 2) at(0, i) = -INFINITY;
      if (s.n > 1) at(0, 1) = 5.0f;
      if (slices > 1) for (int64_t i = 0; i < s.n; ++i) at(1, i) = -INFINITY;
      if (slices > 2) at(2, s.n / 2) = NAN;
      if (slices > 3) at(3, 0) = INFINITY;
      if (slices > 4) for (int64_t i = 0; i < s.n; ++i) at(4, i) = 1e30f + float(i) * 1e24f;
      for (bool log : {false, true}) {
        std::vector<float> out(total, 123.0f);
        fn(log, in.data(), out.data(), s.outer, s.n, s.inner);
        for (int64_t slice = 0; slice < slices; ++slice) {
          std::vector<float> v;
          for (int64_t i = 0; i < s.n; ++i) v.push_back(at(slice, i));
          const std::vector<double> want = softmax_ref(v, log);
          for (int64_t i = 0; i < s.n; ++i) {
            const int64_t k = (slice / s.inner) * s.n * s.inner + i * s.inner + slice % s.inner;
            const float got = out[k];
            const double w = want[i];
            if (std::isnan(w)) {
              EXPECT_TRUE(std::isnan(got)) << s.outer << "x" << s.n << "x" << s.inner << " slice "
                                           << slice << " i " << i << " log " << log;
            } else if (std::isinf(w)) {
              EXPECT_EQ(got, w) << "slice " << slice << " i " << i;
            } else {
              // log: log(sum) carries the sum's rounding (a few ulp of 1) into
              // outputs near 0.
              EXPECT_NEAR(got, w, 2e-6 * std::fabs(w) + (log ? 5e-7 : 1e-7))
                  << s.outer << "x" << s.n << "x" << s.inner << " slice " << slice << " i " << i
                  << " log " << log;
            }
          }
        }
        // In place gives the same result.
        std::vector<float> inplace = in;
        fn(log, inplace.data(), inplace.data(), s.outer, s.n, s.inner);
        for (int64_t k = 0; k < total; ++k) {
          if (std::isnan(out[k])) EXPECT_TRUE(std::isnan(inplace[k]));
          else EXPECT_EQ(inplace[k], out[k]) << k;
        }
      }
    }
  }
}

TEST(FastMathTest, Avx512BuildsGiveTheAvx2Bits) {
  // The AVX-512 builds are the AVX2 loops at twice the width with the same
  // contractions (isa_target.h): every output, NaN payloads aside, is equal.
  if (host_isa() < Isa::kAvx512) GTEST_SKIP() << "CPU without AVX-512";
  const std::vector<float> xs = sweep_inputs();
  std::vector<float> y2(xs.size()), y5(xs.size());
  const int64_t n = static_cast<int64_t>(xs.size());
  for (UnaryF32 op : {UnaryF32::Exp, UnaryF32::Expm1, UnaryF32::Sigmoid, UnaryF32::Tanh,
                      UnaryF32::Erf, UnaryF32::GeluErf, UnaryF32::GeluTanh}) {
    unary_f32_at(Isa::kAvx2, op, xs.data(), y2.data(), n);
    unary_f32_at(Isa::kAvx512, op, xs.data(), y5.data(), n);
    for (size_t i = 0; i < xs.size(); ++i) {
      if (std::isnan(y2[i])) {
        ASSERT_TRUE(std::isnan(y5[i])) << int(op) << " at " << xs[i];
      } else {
        ASSERT_EQ(std::memcmp(&y2[i], &y5[i], sizeof(float)), 0)
            << int(op) << " at " << xs[i] << ": " << y2[i] << " vs " << y5[i];
      }
    }
  }
  std::mt19937 gen(5);
  std::normal_distribution<float> dist(0.0f, 8.0f);
  for (int64_t len : {1, 15, 16, 17, 100, 1000, 4099}) {
    for (int64_t inner : {1, 3, 70}) {
      std::vector<float> in(static_cast<size_t>(2 * len * inner));
      for (float& v : in) v = dist(gen);
      std::vector<float> o2(in.size()), o5(in.size());
      for (bool log : {false, true}) {
        softmax_f32_at(Isa::kAvx2, log, in.data(), o2.data(), 2, len, inner);
        softmax_f32_at(Isa::kAvx512, log, in.data(), o5.data(), 2, len, inner);
        ASSERT_EQ(std::memcmp(o2.data(), o5.data(), o2.size() * sizeof(float)), 0)
            << "softmax len " << len << " inner " << inner << " log " << log;
      }
    }
  }
}

// The softmax terms' exponential: fast_expf's bits where e^x is normal, 0
// below (no subnormal is ever computed), NaN through.
TEST(FastMathTest, ExpOrZeroFlushesOnlyBelowTheNormalRange) {
  for (float x = -87.0f; x <= 0.0f; x += 0.0625f) {
    ASSERT_EQ(fast_exp_or_zero(x), fast_expf(x)) << x;
    ASSERT_GE(fast_exp_or_zero(x), std::numeric_limits<float>::min()) << x;
  }
  for (float x : {-87.001f, -90.0f, -103.9f, -200.0f, -std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(fast_exp_or_zero(x), 0.0f) << x;
  }
  EXPECT_TRUE(std::isnan(fast_exp_or_zero(std::nanf(""))));
}

}  // namespace
}  // namespace ember::kernels::portable
