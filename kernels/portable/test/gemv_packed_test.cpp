// f32_gemv_packed (a decoding step on a weight packed at prepare) against a
// double-precision reference, and bit for bit against the rows of the GEMM
// on the same panels, on the ISA this run dispatches to (ctest runs the
// kernel tests again with EMBER_ISA=baseline and avx2): sizes cross every
// tile, kNC block and kKCPacked depth block edge.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemv_packed.h"

namespace ember::kernels::portable {
namespace {

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

struct Packed {
  std::vector<float> storage;
  PackedPanels<float> panels;
};

Packed pack(const std::vector<float>& b, int64_t k, int64_t n) {
  Packed p;
  p.storage.resize(static_cast<size_t>(
      packed_panels_size(n, k, gemm_nr<float>(), GemmBlocking<float>::kNC)));
  p.panels = pack_b_for_gemm<float>(StridedMatrix<float>{b.data(), n, 1}, k, n, p.storage.data());
  return p;
}

struct Shape {
  int k, n;
};
const Shape kShapes[] = {{1, 1},     {7, 5},     {256, 31},  {257, 96},  {300, 97},
                         {513, 200}, {700, 333}, {64, 1000}, {2050, 70}};

TEST(GemvPackedTest, TakesThePanelsOfThisIsasTile) {
  std::vector<float> b(64 * 40, 1.0f);
  const Packed p = pack(b, 64, 40);
  EXPECT_TRUE(f32_gemv_packed_takes(p.panels));
  PackedPanels<float> other = p.panels;
  other.tile = p.panels.tile == 32 ? 16 : 32;
  EXPECT_FALSE(f32_gemv_packed_takes(other)) << "tile " << other.tile << " on "
                                             << isa_name(cpu_isa());
}

// One to four rows: each row's bits are that row's in gemm() on the same
// panels (the rows of a prompt), and within rounding of float64.
TEST(GemvPackedTest, RowsEqualThePackedGemmsRows) {
  constexpr int kRows = 9;  // The GEMM's m: its rows are the GEMV's and more.
  for (const Shape& s : kShapes) {
    const auto a = random_floats(size_t(kRows) * s.k, 1);
    const auto b = random_floats(size_t(s.k) * s.n, 2);
    const Packed p = pack(b, s.k, s.n);
    std::vector<float> want(size_t(kRows) * s.n);
    gemm<float>(kRows, s.n, s.k, StridedMatrix<float>{a.data(), s.k, 1},
                PackedB<float, StridedMatrix<float>>{p.panels, {b.data(), s.n, 1}}, 1.0f, 0.0f,
                want.data(), s.n, 1);
    for (int m = 1; m <= kGemvMaxM; ++m) {
      SCOPED_TRACE(::testing::Message() << "m " << m << " k " << s.k << " n " << s.n << " isa "
                                        << isa_name(cpu_isa()));
      std::vector<float> got(size_t(m) * s.n, std::nanf(""));
      f32_gemv_packed(m, 0, s.n, s.k, a.data(), s.k, 1, p.panels, 1.0f, 0.0f, got.data(), s.n, 1);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < s.n; ++j) {
          double ref = 0;
          for (int q = 0; q < s.k; ++q) ref += double(a[i * s.k + q]) * b[size_t(q) * s.n + j];
          const float g = got[size_t(i) * s.n + j];
          ASSERT_NEAR(g, ref, 2e-6 * (s.k + 1)) << "row " << i << " column " << j;
          ASSERT_EQ(std::memcmp(&g, &want[size_t(i) * s.n + j], sizeof(float)), 0)
              << "row " << i << " column " << j << ": " << g << " against the GEMM's "
              << want[size_t(i) * s.n + j];
        }
      }
    }
  }
}

// Column ranges starting at any tile give the bits of one call (the thread
// split); alpha, beta, a strided A and a column-major C follow gemm()'s
// contract, with gemm()'s rounding.
TEST(GemvPackedTest, SplitsStridesAlphaAndBeta) {
  const int m = 3, k = 530, n = 333;
  const int64_t tile = gemm_nr<float>();
  const auto a = random_floats(size_t(k) * m, 3);  // Column-major: a_rs 1, a_cs m.
  const auto b = random_floats(size_t(k) * n, 4);
  const auto c0 = random_floats(size_t(m) * n, 5);
  const Packed p = pack(b, k, n);
  for (float beta : {0.0f, 0.5f}) {
    SCOPED_TRACE(::testing::Message() << "beta " << beta);
    // C column-major (c_rs 1, c_cs m).
    std::vector<float> want = c0;
    gemm<float>(m, n, k, StridedMatrix<float>{a.data(), 1, m},
                PackedB<float, StridedMatrix<float>>{p.panels, {b.data(), n, 1}}, -2.0f, beta,
                want.data(), 1, m);
    std::vector<float> whole = c0;
    f32_gemv_packed(m, 0, n, k, a.data(), 1, m, p.panels, -2.0f, beta, whole.data(), 1, m);
    EXPECT_EQ(std::memcmp(whole.data(), want.data(), want.size() * sizeof(float)), 0);
    for (int64_t cut : {tile, 3 * tile, GemmBlocking<float>::kNC + tile, (n / tile) * tile}) {
      std::vector<float> split = c0;
      f32_gemv_packed(m, 0, cut, k, a.data(), 1, m, p.panels, -2.0f, beta, split.data(), 1, m);
      f32_gemv_packed(m, cut, n, k, a.data(), 1, m, p.panels, -2.0f, beta, split.data(), 1, m);
      EXPECT_EQ(std::memcmp(split.data(), want.data(), want.size() * sizeof(float)), 0)
          << "cut at column " << cut;
    }
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int q = 0; q < k; ++q) s += double(a[i + size_t(q) * m]) * b[size_t(q) * n + j];
        const double ref = -2.0 * s + beta * c0[i + size_t(j) * m];
        ASSERT_NEAR(whole[i + size_t(j) * m], ref, 4e-6 * (k + 1)) << i << "," << j;
      }
    }
  }
}

}  // namespace
}  // namespace ember::kernels::portable
