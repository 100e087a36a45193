// Weight-only int8 linear with the weight packed 4 rows interleaved
// (qweight_int8.h): every ISA build the host has (baseline always; AVX2 and
// AVX-512 when present, whatever EMBER_ISA says) against a float64 reference
// of eager's semantics, W = (q − z)·s, per channel (k of any length: the
// masked last line) and in groups of 16, 32, 64 and 128; N not a multiple of
// 4 (the padded block); zero points null, all 0 (none stored) or not; bias
// null or not; 1 to 4 input rows (the AVX-512 pairs and the single row); and
// thread slices that start inside the weight. The packed row dequantize (a
// prompt's panels) gives the bits of qweight_dequantize on the file's row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/quantized/util/qweight_gemv.h"
#include "kernels/quantized/util/qweight_int8.h"
#include "kernels/test/isa_levels.h"

namespace ember::kernels::quantized {
namespace {

using portable::Isa;

struct Shape {
  int64_t n, k, group;
};

class QWeightInt8Test : public ::testing::TestWithParam<Shape> {};

TEST_P(QWeightInt8Test, MatchesTheReferenceOnEveryIsa) {
  const Shape s = GetParam();
  const int64_t groups = s.k / s.group, rows_max = 4;
  ASSERT_TRUE(qweight_int8_packs(s.k, s.group));
  uint32_t seed = 1;
  for (int zeros_kind : {0, 1, 2}) {  // none, all 0, random
    for (bool with_bias : {false, true}) {
      std::mt19937 rng(seed++);
      std::uniform_int_distribution<int> wd(-128, 127), zd(-20, 20);
      std::uniform_real_distribution<float> xd(-2.0f, 2.0f), sd(0.001f, 0.02f);
      std::vector<int8_t> w(static_cast<size_t>(s.n * s.k));
      for (auto& v : w) v = static_cast<int8_t>(wd(rng));
      std::vector<float> scales(static_cast<size_t>(s.n * groups)), zeros, bias, x;
      for (auto& v : scales) v = sd(rng);
      if (zeros_kind > 0) {
        zeros.resize(scales.size());
        for (auto& v : zeros) v = zeros_kind == 1 ? 0.0f : static_cast<float>(zd(rng));
      }
      if (with_bias) {
        for (int64_t i = 0; i < s.n; ++i) bias.push_back(xd(rng));
      }
      for (int64_t i = 0; i < rows_max * s.k; ++i) x.push_back(xd(rng));
      const float* z = zeros.empty() ? nullptr : zeros.data();
      const bool with_zeros = qweight_int8_has_zeros(z, s.n * groups);
      EXPECT_EQ(with_zeros, zeros_kind == 2);
      std::vector<uint8_t> mem(qweight_int8_packed_bytes(s.n, s.k, s.group, with_zeros) + 64);
      void* aligned = reinterpret_cast<void*>(
          (reinterpret_cast<uintptr_t>(mem.data()) + 63) & ~uintptr_t{63});
      const Int8Weights pw = qweight_int8_pack(w.data(), scales.data(), z, s.n, s.k, s.group,
                                               aligned);
      EXPECT_EQ(pw.zeros != nullptr, with_zeros);

      // A row's dequantized slices: qweight_dequantize's bits on the file's
      // row, from a line's start, from inside one, and to short of the end.
      for (Isa isa : testing::host_isa_levels()) {
        for (int64_t k0 : {int64_t{0}, int64_t{5}, s.k > 40 ? int64_t{32} : int64_t{1}}) {
          if (k0 >= s.k) continue;
          const int64_t count = s.k - k0 - (s.k > 20 ? 3 : 0);
          for (int64_t r = 0; r < s.n; ++r) {
            std::vector<float> got(static_cast<size_t>(count), -1.0f), want(got.size());
            qweight_int8_dequantize(pw, r, k0, count, got.data(), isa);
            for (int64_t i = 0; i < count; ++i) {
              const int64_t at = r * groups + (k0 + i) / s.group;
              qweight_dequantize(w.data() + r * s.k + k0 + i, 1, z != nullptr ? z[at] : 0.0f,
                                 scales[at], want.data() + i, Isa::kBaseline);
            }
            ASSERT_EQ(got, want) << portable::isa_name(isa) << " row " << r << " k0 " << k0;
          }
        }
      }

      // y in float64, and Σ |x·W| (the bound's scale).
      std::vector<double> want(static_cast<size_t>(rows_max * s.n)), mag(want.size());
      for (int64_t m = 0; m < rows_max; ++m) {
        for (int64_t r = 0; r < s.n; ++r) {
          double acc = with_bias ? bias[r] : 0.0, a = 0.0;
          for (int64_t i = 0; i < s.k; ++i) {
            const int64_t at = r * groups + i / s.group;
            const double zz = z != nullptr ? z[at] : 0.0;
            const double v = x[m * s.k + i] * ((w[r * s.k + i] - zz) * scales[at]);
            acc += v;
            a += std::fabs(v);
          }
          want[m * s.n + r] = acc;
          mag[m * s.n + r] = a;
        }
      }
      for (Isa isa : testing::host_isa_levels()) {
        for (int64_t rows = 1; rows <= rows_max; ++rows) {
          std::vector<float> y(static_cast<size_t>(rows * s.n), -1e30f);
          const float* b = with_bias ? bias.data() : nullptr;
          // Two slices, as two threads would split the rows (a multiple of 4).
          const int64_t mid = s.n > 8 ? (s.n / 2) / 4 * 4 : s.n;
          qweight_int8_gemv(pw, x.data(), rows, 0, mid, b, y.data(), isa);
          qweight_int8_gemv(pw, x.data(), rows, mid, s.n, b, y.data(), isa);
          for (int64_t m = 0; m < rows; ++m) {
            for (int64_t r = 0; r < s.n; ++r) {
              const size_t i = static_cast<size_t>(m * s.n + r);
              ASSERT_NEAR(y[i], want[i], 1e-5 * mag[i] + 1e-6)
                  << portable::isa_name(isa) << " rows " << rows << " m " << m << " r " << r
                  << " zeros " << zeros_kind << " bias " << with_bias;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QWeightInt8Test,
    ::testing::Values(Shape{8, 64, 64}, Shape{13, 100, 100}, Shape{5, 7, 7}, Shape{6, 33, 33},
                      Shape{37, 96, 32}, Shape{21, 256, 64}, Shape{6, 512, 128},
                      Shape{7, 64, 16}, Shape{9, 48, 16}, Shape{3, 32, 32}, Shape{1, 64, 64},
                      Shape{64, 2048, 2048}, Shape{19, 2048, 32}),
    [](const ::testing::TestParamInfo<Shape>& info) {
      return "n" + std::to_string(info.param.n) + "_k" + std::to_string(info.param.k) + "_g" +
             std::to_string(info.param.group);
    });

// Groups that are neither the row nor multiples of 16 would let a line span
// two groups: the op keeps those on the file's row-major weight.
TEST(QWeightInt8, PacksWholeRowsAndGroupsOfSixteen) {
  EXPECT_TRUE(qweight_int8_packs(100, 100));
  EXPECT_TRUE(qweight_int8_packs(96, 32));
  EXPECT_TRUE(qweight_int8_packs(96, 16));
  EXPECT_FALSE(qweight_int8_packs(96, 8));
  EXPECT_FALSE(qweight_int8_packs(80, 40));
  EXPECT_FALSE(qweight_int8_packs(96, 64));  // 64 does not divide 96
}

}  // namespace
}  // namespace ember::kernels::quantized
