// Weight-only int4 in VPDPBUSD's 16-row blocks (qweight_int4_fixed.h):
// - the packed weight dequantizes to the float layout's values, bit for bit,
//   on every ISA build the host has (a prompt's GEMM panels);
// - the fixed-point input: the AVX-512 build writes the plain loops' bytes
//   (round-to-nearest-even ties, chunks of zeros, values near the float
//   limits, subnormals), each value is within max |x| · 2^−22 of its
//   chunk's x, and a NaN or infinity is refused;
// - every build the host has (VPDPBUSD, VPMADDUBSW, the plain loops), the
//   kernel against a float64 reference of eager's
//   W = (q − z)·s over groups of 32, 64, 128 and K, N not a multiple of 16,
//   zero terms or not, bias or not, 1 to 4 input rows and thread slices; and
//   against the plain loops over the same fixed-point values;
// - the op: a NaN in the input gives eager's NaN rows (the float GEMM).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/quantized/test/qweight_problem.h"
#include "kernels/quantized/util/qweight_int4.h"
#include "kernels/quantized/util/qweight_int4_fixed.h"
#include "kernels/test/isa_levels.h"
#include "kernels/test/tensor_factory.h"

namespace ember::kernels::quantized {
namespace {

using portable::Isa;

void* aligned64(std::vector<uint8_t>& v) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
}

using qweight_test::Problem;
using qweight_test::reference;

// qweight_test::make_problem with zero points none (0), all 0 (1: no zero terms
// stored) or random (2), and activations of mixed magnitudes (a chunk's
// small values keep fewer bits).
Problem make_problem(int64_t n, int64_t k, int64_t group, int64_t rows, int zeros_kind,
                     bool with_bias, uint32_t seed) {
  Problem p = qweight_test::make_problem(n, k, group, rows, zeros_kind > 0, with_bias, seed);
  if (zeros_kind == 1) std::fill(p.zeros.begin(), p.zeros.end(), 0.0f);
  for (size_t i = 0; i < p.x.size(); i += 5) p.x[i] *= 30.0f;
  return p;
}

struct Shape {
  int64_t n, k, group;
};

class QWeightInt4FixedTest : public ::testing::TestWithParam<Shape> {};

TEST_P(QWeightInt4FixedTest, DequantizesAsTheFloatLayoutAndMatchesTheReference) {
  const Shape s = GetParam();
  ASSERT_TRUE(qweight_int4_fixed_supports(s.k, s.group));
  uint32_t seed = 1;
  for (int zeros_kind : {0, 1, 2}) {  // none, all 0 (no zero terms stored), random
    for (bool with_bias : {false, true}) {
      const Problem p = make_problem(s.n, s.k, s.group, 4, zeros_kind, with_bias, seed++);
      const float* z = zeros_kind > 0 ? p.zeros.data() : nullptr;
      const bool zero_term =
          qweight_int4_has_zero_term(p.scales.data(), z, s.n * (s.k / s.group));
      std::vector<uint8_t> mem(qweight_int4_fixed_packed_bytes(s.n, s.k, s.group, zero_term) + 64);
      const Int4FixedWeights w =
          qweight_int4_fixed_pack(p.w.data(), p.scales.data(), z, s.n, s.k, s.group,
                                 aligned64(mem));
      ASSERT_EQ(w.zero_term, zero_term);
      std::vector<uint8_t> mem4(qweight_int4_packed_bytes(s.n, s.k, s.group, zero_term) + 64);
      const Int4Weights w4 =
          qweight_int4_pack(p.w.data(), p.scales.data(), z, s.n, s.k, s.group, aligned64(mem4));
      // Every row, from a tile's start and from inside one (the plain loop's
      // partial tile), on every build: the float layout's bits.
      for (Isa isa : testing::host_isa_levels()) {
        for (int64_t k0 : {int64_t{0}, s.k > 64 ? int64_t{32} : int64_t{0}, int64_t{5}}) {
          const int64_t count = s.k - k0 - (s.k > 40 ? 3 : 0);
          std::vector<float> got(static_cast<size_t>(count)), want(got.size());
          for (int64_t r = 0; r < s.n; ++r) {
            qweight_int4_fixed_dequantize(w, r, k0, count, got.data(), 1, isa);
            qweight_int4_dequantize(w4, r, k0, count, want.data(), 1, Isa::kBaseline);
            ASSERT_EQ(got, want) << portable::isa_name(isa) << " row " << r << " k0 " << k0;
          }
        }
      }
      std::vector<double> want, mag;
      reference(p, 4, want, mag);
      // Every build the host has, 1 to 4 input rows.
      const auto isas = testing::host_isa_levels();
      for (size_t run = 0; run < isas.size() * 4; ++run) {
        const Isa isa = isas[run / 4];
        const auto rows = static_cast<int64_t>(run % 4) + 1;
        std::vector<uint8_t> in_mem(qweight_int4_fixed_input_bytes(rows, s.k) + 64);
        Int4FixedInput in;
        ASSERT_TRUE(
            qweight_int4_fixed_input(p.x.data(), rows, s.k, aligned64(in_mem), &in, isa));
        std::vector<float> y(static_cast<size_t>(rows * s.n), -1e30f), plain(y.size(), -1e30f);
        const float* b = with_bias ? p.bias.data() : nullptr;
        // Two slices, as two threads would split the rows (a multiple of 16).
        const int64_t mid = s.n > 32 ? (s.n / 2) / 16 * 16 : s.n;
        qweight_int4_fixed_gemv(w, in, 0, mid, b, y.data(), isa);
        qweight_int4_fixed_gemv(w, in, mid, s.n, b, y.data(), isa);
        qweight_int4_fixed_gemv_reference(w, in, 0, s.n, b, plain.data());
        for (int64_t m = 0; m < rows; ++m) {
          for (int64_t r = 0; r < s.n; ++r) {
            const size_t i = static_cast<size_t>(m * s.n + r);
            // Eager's weight-only semantics: the fixed point's error is
            // 2^−22 of a chunk's largest |x|, the sums float32's.
            ASSERT_NEAR(y[i], want[i], 1e-5 * mag[i] + 1e-6)
                << portable::isa_name(isa) << " rows " << rows << " m " << m << " r " << r
                << " zeros " << zeros_kind << " bias " << with_bias;
            // The same fixed-point values summed in float64: only the
            // kernel's float32 accumulation differs.
            ASSERT_NEAR(y[i], plain[i], 2e-6 * mag[i] + 1e-6)
                << portable::isa_name(isa) << " rows " << rows << " r " << r;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QWeightInt4FixedTest,
    ::testing::Values(Shape{16, 64, 32}, Shape{13, 256, 32}, Shape{37, 96, 32},
                      Shape{21, 256, 64}, Shape{6, 512, 128}, Shape{11, 160, 160},
                      Shape{3, 32, 32}, Shape{1, 64, 64}, Shape{80, 2048, 32},
                      Shape{45, 1024, 256}),
    [](const ::testing::TestParamInfo<Shape>& info) {
      return "n" + std::to_string(info.param.n) + "_k" + std::to_string(info.param.k) + "_g" +
             std::to_string(info.param.group);
    });

TEST(QWeightInt4Fixed, SupportsGroupsThatAreMultiplesOf32) {
  EXPECT_TRUE(qweight_int4_fixed_supports(64, 32));
  EXPECT_TRUE(qweight_int4_fixed_supports(256, 128));
  EXPECT_FALSE(qweight_int4_fixed_supports(48, 16));
  EXPECT_FALSE(qweight_int4_fixed_supports(80, 40));
  EXPECT_FALSE(qweight_int4_fixed_supports(96, 64));  // 64 does not divide 96
}

// Chunks that stress the conversion: ties at every limb, zeros, huge and
// tiny magnitudes (E < −105 takes the plain loops in every build), signs.
std::vector<float> hard_input(int64_t k) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> xd(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k));
  for (auto& v : x) v = xd(rng);
  for (int64_t j = 0; j < 32; ++j) x[32 + j] = 0.0f;                     // a chunk of zeros
  x[64] = 1.0f;                                                         // E = 1: 2^21 units
  for (int64_t j = 1; j < 32; ++j) x[64 + j] = (2.0f * j + 1.0f) / 4194304.0f;  // ties
  x[96] = 3.0e38f;
  x[97] = -3.4028234663852886e38f;
  x[98] = 1.0e30f;
  x[128] = 1.0e-35f;  // E < −105
  x[129] = -3.0e-38f;
  x[130] = 1.0e-44f;  // subnormal
  x[160] = -0.0f;
  x[161] = 1.0e-40f;  // subnormal among normal values
  return x;
}

TEST(QWeightInt4Fixed, InputIsThePlainLoopsBytesOnEveryBuildAndWithinItsBound) {
  const int64_t k = 256, rows = 2;
  std::vector<float> x = hard_input(k);
  const std::vector<float> second = hard_input(k);
  x.insert(x.end(), second.rbegin(), second.rend());
  const size_t bytes = qweight_int4_fixed_input_bytes(rows, k);
  std::vector<uint8_t> plain_mem(bytes + 64);
  Int4FixedInput plain;
  ASSERT_TRUE(qweight_int4_fixed_input(x.data(), rows, k, aligned64(plain_mem), &plain,
                                      Isa::kBaseline));
  for (Isa isa : testing::host_isa_levels()) {
    std::vector<uint8_t> mem(bytes + 64, 0xAB);
    Int4FixedInput got;
    ASSERT_TRUE(qweight_int4_fixed_input(x.data(), rows, k, aligned64(mem), &got, isa));
    const int64_t chunks = rows * k / kInt4FixedChunk;
    ASSERT_EQ(0, std::memcmp(got.limbs, plain.limbs, static_cast<size_t>(chunks * 3 * 32)))
        << portable::isa_name(isa);
    for (int64_t c = 0; c < chunks; ++c) {
      ASSERT_EQ(got.step[c], plain.step[c]) << portable::isa_name(isa) << " chunk " << c;
      ASSERT_EQ(got.sum_v[c], plain.sum_v[c]) << portable::isa_name(isa) << " chunk " << c;
      ASSERT_EQ(got.sum_x[c], plain.sum_x[c]) << portable::isa_name(isa) << " chunk " << c;
    }
  }
  // Each value from its limbs: within 2^−22 of its chunk's largest |x|, and
  // ties rounded to even.
  for (int64_t c = 0; c < rows * k / kInt4FixedChunk; ++c) {
    const float* xc = x.data() + c * 32;
    double mx = 0.0;
    for (int64_t j = 0; j < 32; ++j) mx = std::fmax(mx, std::fabs(static_cast<double>(xc[j])));
    const int8_t* l = plain.limbs + c * 3 * 32;
    int64_t sv = 0;
    for (int64_t j = 0; j < 32; ++j) {
      const int64_t v = l[j] + 256 * l[32 + j] + 65536 * l[64 + j];
      EXPECT_LE(std::llabs(v), int64_t{1} << 22) << "chunk " << c << " j " << j;
      sv += v;
      const double back = static_cast<double>(v) * plain.step[c];
      // Chunks below 2^−105 keep their bits only to float's range: their
      // step may underflow (their products are below float's anyway).
      if (mx > 1e-30) {
        EXPECT_LE(std::fabs(back - xc[j]), mx * std::ldexp(1.0, -22)) << "chunk " << c << " j " << j;
      }
    }
    EXPECT_EQ(sv, plain.sum_v[c]) << "chunk " << c;
  }
  // x[64] = 1 makes E = 1, so x[64 + j] = (2j + 1) · 2^−22 is v = j + 0.5:
  // rounded to the even neighbour.
  const int8_t* ties = plain.limbs + 2 * 3 * 32;
  for (int64_t j = 1; j < 32; ++j) {
    EXPECT_EQ(ties[j], j % 2 == 0 ? j : j + 1) << "j " << j;
  }
}

TEST(QWeightInt4Fixed, InputRefusesNaNAndInfinity) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (int64_t at : {0, 31, 70, 127}) {
      std::vector<float> x(128, 0.5f);
      x[static_cast<size_t>(at)] = bad;
      for (Isa isa : testing::host_isa_levels()) {
        std::vector<uint8_t> mem(qweight_int4_fixed_input_bytes(1, 128) + 64);
        Int4FixedInput in;
        EXPECT_FALSE(qweight_int4_fixed_input(x.data(), 1, 128, aligned64(mem), &in, isa))
            << bad << " at " << at << " " << portable::isa_name(isa);
      }
    }
  }
}

// The op on a NaN or infinite input: eager's result (NaN rows, from the float
// GEMM), not the fixed point's. Where the float int4 kernel runs, the same answer.
TEST(QWeightInt4Fixed, OpGivesEagersNaNsForANonFiniteInput) {
  using testing::TensorFactory;
  const int64_t n = 20, k = 64, group = 32;
  for (int64_t rows : {1, 3}) {
    Problem p = make_problem(n, k, group, rows, 0, true, 9);
    p.x[static_cast<size_t>(k + 5 < rows * k ? k + 5 : 5)] = std::nanf("");
    TensorFactory tf;
    auto& x = tf.make<float>({static_cast<int32_t>(rows), static_cast<int32_t>(k)}, p.x);
    auto& w = tf.make<int8_t>({static_cast<int32_t>(n), static_cast<int32_t>(k)}, p.w);
    auto& s = tf.make<float>({static_cast<int32_t>(n), static_cast<int32_t>(k / group)},
                             p.scales);
    auto& b = tf.make<float>({static_cast<int32_t>(n)}, p.bias);
    auto& out = tf.make<float>({static_cast<int32_t>(rows), static_cast<int32_t>(n)});
    KernelContext ctx("ember_quantized::linear_weight_only.out");
    std::vector<float> scratch(static_cast<size_t>(16 * k), std::nanf(""));
    ctx.set_scratch(scratch.data(), scratch.size() * sizeof(float));
    const auto result = testing::call_kernel(
        ctx, "ember_quantized::linear_weight_only.out",
        {&x.ev, &w.ev, &s.ev, tf.none(), tf.i(group), &b.ev, &out.ev}, true, {1, 2, 5}, 2);
    ASSERT_TRUE(result.ok()) << result.message;
    std::vector<double> want, mag;
    reference(p, rows, want, mag);
    const std::vector<float> got = out.values<float>();
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << "rows " << rows << " i " << i;
      } else {
        EXPECT_NEAR(got[i], want[i], 1e-5 * mag[i] + 1e-6) << "rows " << rows << " i " << i;
      }
    }
  }
}

// Without the scratch prepare reserved, the fixed-point path names what is missing
// (load_method always grants it; a caller that does not gets an error).
TEST(QWeightInt4Fixed, OpFailsWithoutItsScratch) {
  if (!qweight_int4_fixed_preferred(portable::cpu_isa())) {
    GTEST_SKIP() << "the float int4 kernel runs here: it needs no scratch";
  }
  using testing::TensorFactory;
  const int64_t n = 20, k = 64, group = 32;
  const Problem p = make_problem(n, k, group, 1, 0, false, 3);
  TensorFactory tf;
  auto& x = tf.make<float>({1, static_cast<int32_t>(k)}, p.x);
  auto& w = tf.make<int8_t>({static_cast<int32_t>(n), static_cast<int32_t>(k)}, p.w);
  auto& s = tf.make<float>({static_cast<int32_t>(n), static_cast<int32_t>(k / group)}, p.scales);
  auto& out = tf.make<float>({1, static_cast<int32_t>(n)});
  KernelContext ctx("ember_quantized::linear_weight_only.out");
  const auto result = testing::call_kernel(
      ctx, "ember_quantized::linear_weight_only.out",
      {&x.ev, &w.ev, &s.ev, tf.none(), tf.i(group), tf.none(), &out.ev}, true, {1, 2});
  EXPECT_KERNEL_FAILS(result, "ember_quantized::linear_weight_only.out", "scratch");
}

}  // namespace
}  // namespace ember::kernels::quantized
