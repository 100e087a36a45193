// Weight-only int4 linear (qweight_int4.h and the op that packs at prepare):
// every ISA build the host has (baseline always; AVX2 and AVX-512 when
// present, whatever EMBER_ISA says) against a float64 reference of eager's
// semantics, W = (q − z)·s, over groups of 32, 64, 128, K (per channel) and
// groups that are not multiples of 32 (16, 8, 48, 40: the masked tiles), N
// not a multiple of 4 (the padded block), group counts that leave a partial
// set of headers, zero points null, all 0 (no zero terms stored) or not,
// bias null or not, 1 to 4 input rows, and thread slices that start inside the weight.
// The op: the int4 path, the GEMM path of a prompt, and a weight with a value
// outside [−8, 7], which runs the int8 kernel instead of being truncated.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/quantized/util/qweight_gemv.h"
#include "kernels/quantized/test/qweight_problem.h"
#include "kernels/quantized/util/qweight_int4.h"
#include "kernels/test/isa_levels.h"
#include "kernels/test/tensor_factory.h"

namespace ember::kernels::quantized {
namespace {

using portable::Isa;

using qweight_test::make_problem;
using qweight_test::Problem;
using qweight_test::reference;

struct Shape {
  int64_t n, k, group;
};

class QWeightInt4Test : public ::testing::TestWithParam<Shape> {};

TEST_P(QWeightInt4Test, MatchesTheReferenceOnEveryIsa) {
  const Shape s = GetParam();
  uint32_t seed = 1;
  // zeros: none, all 0 (torchao's symmetric int4: the layout without zero terms), random.
  for (int zeros_kind : {0, 1, 2}) {
    const bool with_zeros = zeros_kind > 0;
    for (bool with_bias : {false, true}) {
      Problem p = make_problem(s.n, s.k, s.group, 4, with_zeros, with_bias, seed++);
      if (zeros_kind == 1) std::fill(p.zeros.begin(), p.zeros.end(), 0.0f);
      const bool zero_term = qweight_int4_has_zero_term(
          p.scales.data(), with_zeros ? p.zeros.data() : nullptr, s.n * (s.k / s.group));
      std::vector<uint8_t> mem(qweight_int4_packed_bytes(s.n, s.k, s.group, zero_term) + 64);
      void* aligned = reinterpret_cast<void*>(
          (reinterpret_cast<uintptr_t>(mem.data()) + 63) & ~uintptr_t{63});
      const Int4Weights w =
          qweight_int4_pack(p.w.data(), p.scales.data(), with_zeros ? p.zeros.data() : nullptr,
                            s.n, s.k, s.group, aligned);
      // The packed values dequantize to eager's weight (one rounding apart).
      for (int64_t r = 0; r < s.n; r += 3) {
        for (int64_t i = 0; i < s.k; i += 7) {
          const int64_t g = r * (s.k / s.group) + i / s.group;
          const float z = with_zeros ? p.zeros[g] : 0.0f;
          const float want = (static_cast<float>(p.w[r * s.k + i]) - z) * p.scales[g];
          ASSERT_NEAR(qweight_int4_at(w, r, i), want, 1e-6f) << r << "," << i;
        }
      }
      // The vector lookups of whole tiles give the plain loop's bits, from a
      // group's start and from inside a row (the loop takes a partial tile).
      for (Isa isa : testing::host_isa_levels()) {
        for (int64_t k0 : {int64_t{0}, s.k > 64 ? int64_t{32} : int64_t{0}, int64_t{5}}) {
          const int64_t count = s.k - k0 - (s.k > 40 ? 3 : 0);
          std::vector<float> got(static_cast<size_t>(count)), plain(got.size());
          for (int64_t r = 0; r < s.n; ++r) {
            qweight_int4_dequantize(w, r, k0, count, got.data(), 1, isa);
            qweight_int4_dequantize(w, r, k0, count, plain.data(), 1, Isa::kBaseline);
            ASSERT_EQ(got, plain) << portable::isa_name(isa) << " row " << r << " k0 " << k0;
          }
        }
      }
      std::vector<double> want, mag;
      reference(p, 4, want, mag);
      for (Isa isa : testing::host_isa_levels()) {
        for (int64_t rows = 1; rows <= 4; ++rows) {
          std::vector<float> y(static_cast<size_t>(rows * s.n), -1e30f);
          const float* b = with_bias ? p.bias.data() : nullptr;
          // Two slices, as two threads would split the rows (a multiple of 4).
          const int64_t mid = s.n > 8 ? (s.n / 2) / 4 * 4 : s.n;
          qweight_int4_gemv(w, p.x.data(), rows, 0, mid, b, y.data(), isa);
          qweight_int4_gemv(w, p.x.data(), rows, mid, s.n, b, y.data(), isa);
          for (int64_t m = 0; m < rows; ++m) {
            for (int64_t r = 0; r < s.n; ++r) {
              const size_t i = static_cast<size_t>(m * s.n + r);
              ASSERT_NEAR(y[i], want[i], 1e-5 * mag[i] + 1e-6)
                  << portable::isa_name(isa) << " rows " << rows << " m " << m << " r " << r
                  << " zeros " << with_zeros << " bias " << with_bias;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QWeightInt4Test,
    ::testing::Values(Shape{8, 64, 32}, Shape{13, 256, 32}, Shape{37, 96, 32},
                      Shape{21, 256, 64}, Shape{6, 512, 128}, Shape{11, 160, 160},
                      Shape{9, 48, 48}, Shape{7, 64, 16}, Shape{10, 40, 8}, Shape{5, 80, 40},
                      Shape{3, 32, 32}, Shape{1, 64, 64}, Shape{64, 2048, 32}),
    [](const ::testing::TestParamInfo<Shape>& info) {
      return "n" + std::to_string(info.param.n) + "_k" + std::to_string(info.param.k) + "_g" +
             std::to_string(info.param.group);
    });

TEST(QWeightInt4, FitsNamesTheFirstValueOutOfRange) {
  std::vector<int8_t> w(300, 7);
  w[0] = -8;
  int bad = 0;
  int64_t at = -1;
  EXPECT_TRUE(qweight_int4_fits(w.data(), static_cast<int64_t>(w.size()), &bad, &at));
  w[200] = 8;
  w[250] = -9;
  EXPECT_FALSE(qweight_int4_fits(w.data(), static_cast<int64_t>(w.size()), &bad, &at));
  EXPECT_EQ(bad, 8);
  EXPECT_EQ(at, 200);
}

// The op: prepare packs when the values fit int4, else the int8 kernel runs;
// decode rows (1-4) and a prompt (9 rows, the GEMM) both match. scratch: the
// method's scratch memory, into which a prompt's input is packed once (a k
// of 24576 splits 50 rows into chunks of 24, 24 and 2).
void check_op(int lo, int hi, int64_t rows, bool with_zeros, uint32_t seed, bool scratch = false,
              int64_t k = 96, bool nibbles = false, int64_t group = 32) {
  using testing::TensorFactory;
  const int64_t n = 19;
  const Problem p = make_problem(n, k, group, rows, with_zeros, true, seed, lo, hi);
  TensorFactory tf;
  auto& x = tf.make<float>({static_cast<int32_t>(rows), static_cast<int32_t>(k)}, p.x);
  // nibbles: the weight as the program stores int4, two values per byte.
  std::vector<uint8_t> packed;
  for (size_t i = 0; i < p.w.size(); i += 2) {
    packed.push_back(static_cast<uint8_t>((p.w[i] + 8) | ((p.w[i + 1] + 8) << 4)));
  }
  auto& w = nibbles
                ? tf.make<uint8_t>({static_cast<int32_t>(n), static_cast<int32_t>(k / 2)}, packed)
                : tf.make<int8_t>({static_cast<int32_t>(n), static_cast<int32_t>(k)}, p.w);
  auto& s = tf.make<float>({static_cast<int32_t>(n), static_cast<int32_t>(k / group)}, p.scales);
  auto& b = tf.make<float>({static_cast<int32_t>(n)}, p.bias);
  auto& out = tf.make<float>({static_cast<int32_t>(rows), static_cast<int32_t>(n)});
  EValue* zeros = tf.none();
  if (with_zeros) {
    zeros = &tf.make<float>({static_cast<int32_t>(n), static_cast<int32_t>(k / group)}, p.zeros)
                 .ev;
  }
  KernelContext ctx("ember_quantized::linear_weight_only.out");
  std::vector<float> scratch_memory;
  // Decode rows: the scratch load_method grants (the VNNI int4 path writes
  // its fixed-point input there).
  if (scratch || rows <= 4) {
    scratch_memory.assign(static_cast<size_t>(64 * k + 64), std::nanf(""));
    ctx.set_scratch(scratch_memory.data(), scratch_memory.size() * sizeof(float));
  }
  const auto result = testing::call_kernel(
      ctx, "ember_quantized::linear_weight_only.out",
      {&x.ev, &w.ev, &s.ev, zeros, tf.i(group), &b.ev, &out.ev}, true,
      with_zeros ? std::vector<size_t>{1, 2, 3, 5} : std::vector<size_t>{1, 2, 5}, 2);
  ASSERT_TRUE(result.ok()) << result.message;
  std::vector<double> want, mag;
  reference(p, rows, want, mag);
  const std::vector<float> got = out.values<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5 * mag[i] + 1e-6) << "rows " << rows << " i " << i;
  }
}

TEST(QWeightInt4, OpMatchesTheReference) {
  for (int64_t rows : {1, 2, 4, 9}) {
    check_op(-8, 7, rows, true, 10 + static_cast<uint32_t>(rows));
    check_op(-8, 7, rows, false, 20 + static_cast<uint32_t>(rows));
  }
}

TEST(QWeightInt4, OpTakesInt4ValuesTwoPerByte) {
  for (int64_t rows : {1, 3, 9}) {
    check_op(-8, 7, rows, true, 60 + static_cast<uint32_t>(rows), false, 96, /*nibbles=*/true);
    check_op(-8, 7, rows, false, 70 + static_cast<uint32_t>(rows), true, 96, /*nibbles=*/true);
  }
}

TEST(QWeightInt4, OpRunsTheInt8KernelForValuesOutsideInt4) {
  for (int64_t rows : {1, 9}) {
    check_op(-8, 8, rows, true, 30 + static_cast<uint32_t>(rows));  // One value is likely 8.
    check_op(-128, 127, rows, false, 40 + static_cast<uint32_t>(rows));
  }
}

// int8 weights: packed 4 rows interleaved per channel and in groups that are
// multiples of 16 (qweight_int8.h); other groups read the file's rows
// (qweight_gemv.h). Decode rows (1-4) and a prompt (9 rows, the GEMM).
TEST(QWeightInt8, OpMatchesTheReferencePackedAndRowByRow) {
  for (int64_t rows : {1, 2, 3, 4, 9}) {
    const auto seed = static_cast<uint32_t>(rows);
    check_op(-128, 127, rows, false, 80 + seed, false, 100, false, /*group=*/100);
    check_op(-128, 127, rows, true, 90 + seed, false, 96, false, /*group=*/16);
    check_op(-128, 127, rows, true, 100 + seed, false, 96, false, /*group=*/8);
    check_op(-128, 127, rows, false, 110 + seed, false, 80, false, /*group=*/40);
  }
}

// The int8 weight's row dequantize (a prompt's panels): the plain loop's
// bits on every ISA, over lengths around the 8-wide vectors.
TEST(QWeightInt8, DequantizeGivesThePlainLoopsBits) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> wd(-128, 127);
  std::vector<int8_t> w(77);
  for (auto& v : w) v = static_cast<int8_t>(wd(rng));
  for (int64_t count : {0, 1, 7, 8, 9, 31, 77}) {
    std::vector<float> want(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) want[i] = (static_cast<float>(w[i]) - 3.0f) * 0.0173f;
    for (Isa isa : testing::host_isa_levels()) {
      std::vector<float> got(want.size(), -1.0f);
      qweight_dequantize(w.data(), count, 3.0f, 0.0173f, got.data(), isa);
      EXPECT_EQ(got, want) << portable::isa_name(isa) << " count " << count;
    }
  }
}

TEST(QWeightInt4, OpPacksAPromptOnceIntoScratch) {
  for (bool int4 : {true, false}) {
    const int hi = int4 ? 7 : 127, lo = int4 ? -8 : -128;
    check_op(lo, hi, 9, true, 50, /*scratch=*/true);
    check_op(lo, hi, 40, false, 51, /*scratch=*/true);
    check_op(lo, hi, 50, true, 52, /*scratch=*/true, /*k=*/24576);
  }
}

}  // namespace
}  // namespace ember::kernels::quantized
