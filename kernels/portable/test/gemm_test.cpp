// The GEMM building blocks, called directly: the AVX2+FMA microkernel against
// the portable one, and the small-m (GEMV) path against a double-precision
// reference, on odd sizes that cross every tile and block edge.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemv.h"

namespace ember::kernels::portable {
namespace {

template <typename T>
std::vector<T> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return v;
}

struct Problem {
  int m, n, k;
  bool a_trans, b_trans;  // Store A / B column-major.
  bool c_trans;           // Store C column-major (strided C path).
  double alpha, beta;
};

// The product in double with the given strides; C starts as `c0`.
template <typename T>
std::vector<double> reference(const Problem& p, const std::vector<T>& a, const std::vector<T>& b,
                              const std::vector<T>& c0) {
  const int64_t a_rs = p.a_trans ? 1 : p.k, a_cs = p.a_trans ? p.m : 1;
  const int64_t b_rs = p.b_trans ? 1 : p.n, b_cs = p.b_trans ? p.k : 1;
  const int64_t c_rs = p.c_trans ? 1 : p.n, c_cs = p.c_trans ? p.m : 1;
  std::vector<double> want(c0.begin(), c0.end());
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) {
      double s = 0;
      for (int q = 0; q < p.k; ++q) s += double(a[i * a_rs + q * a_cs]) * b[q * b_rs + j * b_cs];
      double& d = want[i * c_rs + j * c_cs];
      d = p.alpha * s + (p.beta == 0 ? 0 : p.beta * d);
    }
  }
  return want;
}

enum class Path { kPortable, kAvx2, kAvx512, kSmallM };

template <typename T>
void check(const Problem& p, Path path) {
  const auto a = random_values<T>(size_t(p.m) * p.k, 1);
  const auto b = random_values<T>(size_t(p.k) * p.n, 2);
  auto c = random_values<T>(size_t(p.m) * p.n, 3);
  const auto want = reference(p, a, b, c);
  const int64_t a_rs = p.a_trans ? 1 : p.k, a_cs = p.a_trans ? p.m : 1;
  const int64_t b_rs = p.b_trans ? 1 : p.n, b_cs = p.b_trans ? p.k : 1;
  const int64_t c_rs = p.c_trans ? 1 : p.n, c_cs = p.c_trans ? p.m : 1;
  const StridedMatrix<T> am{a.data(), a_rs, a_cs};
  const StridedMatrix<T> bm{b.data(), b_rs, b_cs};
  const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
  switch (path) {
    case Path::kPortable:
      gemm_portable<T>(p.m, p.n, p.k, am, bm, alpha, beta, c.data(), c_rs, c_cs);
      break;
    case Path::kAvx2:
      if constexpr (std::is_same_v<T, float>) {
        gemm_f32_avx2_fma(p.m, p.n, p.k, am, bm, alpha, beta, c.data(), c_rs, c_cs);
      }
      break;
    case Path::kAvx512:
      if constexpr (std::is_same_v<T, float>) {
        gemm_f32_avx512f(p.m, p.n, p.k, am, bm, alpha, beta, c.data(), c_rs, c_cs);
      }
      break;
    case Path::kSmallM:
      ASSERT_TRUE(gemm_small_m<T>(p.m, p.n, p.k, a.data(), a_rs, a_cs, b.data(), b_rs, b_cs,
                                  alpha, beta, c.data(), c_rs, c_cs));
      break;
  }
  const double tol = (std::is_same_v<T, float> ? 2e-6 : 1e-13) * (p.k + 1);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(c[i], want[i], tol) << "element " << i << " of " << p.m << "x" << p.n << "x"
                                    << p.k;
  }
}

const Problem kOddSizes[] = {
    {1, 1, 1, false, false, false, 1, 0},      {5, 7, 3, false, false, false, 1, 0},
    {6, 16, 128, false, false, false, 1, 0},   {7, 17, 129, false, false, false, 0.5, 2},
    {13, 37, 29, true, false, false, 1, 1},    {77, 101, 150, false, true, false, -1, 0},
    {73, 97, 257, false, false, true, 1, 0.5}, {100, 200, 300, true, true, true, 2, -1},
    {2, 193, 5, false, false, false, 1, 1},    {150, 3, 140, false, false, false, 1, 0},
};

TEST(GemmTest, PortableMatchesReferenceOnOddSizes) {
  for (const Problem& p : kOddSizes) {
    check<float>(p, Path::kPortable);
    check<double>(p, Path::kPortable);
  }
}

TEST(GemmTest, Avx2FmaMatchesPortableOnOddSizes) {
  // Direct calls: the AVX2 build runs wherever the host has it, whatever EMBER_ISA says.
  if (host_isa() < Isa::kAvx2) GTEST_SKIP() << "CPU without AVX2+FMA";
  for (const Problem& p : kOddSizes) {
    check<float>(p, Path::kAvx2);
    // Both paths on the same inputs agree closely (different summation order only).
    const auto a = random_values<float>(size_t(p.m) * p.k, 7);
    const auto b = random_values<float>(size_t(p.k) * p.n, 8);
    std::vector<float> c1(size_t(p.m) * p.n, 0.0f), c2 = c1;
    const StridedMatrix<float> am{a.data(), p.k, 1}, bm{b.data(), p.n, 1};
    gemm_portable<float>(p.m, p.n, p.k, am, bm, 1.0f, 0.0f, c1.data(), p.n, 1);
    gemm_f32_avx2_fma(p.m, p.n, p.k, am, bm, 1.0f, 0.0f, c2.data(), p.n, 1);
    for (size_t i = 0; i < c1.size(); ++i) ASSERT_NEAR(c1[i], c2[i], 1e-6 * (p.k + 1)) << i;
  }
}

TEST(GemmTest, Avx512MatchesReferenceAndAvx2BitForBit) {
  // Direct calls, as above. Both microkernels run the same fused
  // multiply-add chain per element, so they give the same bits on every
  // layout, alpha/beta and edge tile; the extra sizes cross the 8×32 tile's
  // edges and the kMC/kNC/kKC blocks.
  if (host_isa() < Isa::kAvx512) GTEST_SKIP() << "CPU without AVX-512";
  std::vector<Problem> problems(std::begin(kOddSizes), std::end(kOddSizes));
  problems.push_back({8, 32, 1, false, false, false, 1, 0});
  problems.push_back({9, 33, 513, false, false, false, 1, 1});
  problems.push_back({145, 97, 300, false, true, false, 0.75, 0.25});
  problems.push_back({64, 3136, 576, false, false, false, 1, 0});
  for (const Problem& p : problems) {
    check<float>(p, Path::kAvx512);
    const int64_t a_rs = p.a_trans ? 1 : p.k, a_cs = p.a_trans ? p.m : 1;
    const int64_t b_rs = p.b_trans ? 1 : p.n, b_cs = p.b_trans ? p.k : 1;
    const int64_t c_rs = p.c_trans ? 1 : p.n, c_cs = p.c_trans ? p.m : 1;
    const auto a = random_values<float>(size_t(p.m) * p.k, 17);
    const auto b = random_values<float>(size_t(p.k) * p.n, 18);
    std::vector<float> c1 = random_values<float>(size_t(p.m) * p.n, 19), c2 = c1;
    const StridedMatrix<float> am{a.data(), a_rs, a_cs}, bm{b.data(), b_rs, b_cs};
    const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
    gemm_f32_avx2_fma(p.m, p.n, p.k, am, bm, alpha, beta, c1.data(), c_rs, c_cs);
    gemm_f32_avx512f(p.m, p.n, p.k, am, bm, alpha, beta, c2.data(), c_rs, c_cs);
    for (size_t i = 0; i < c1.size(); ++i) {
      ASSERT_EQ(c1[i], c2[i]) << "element " << i << " of " << p.m << "x" << p.n << "x" << p.k;
    }
  }
}

TEST(GemvTest, Avx512RowStreamGivesTheAvx2Bits) {
  if (host_isa() < Isa::kAvx512) GTEST_SKIP() << "CPU without AVX-512";
  for (int m = 1; m <= kGemvMaxM; ++m) {
    for (int n : {1, 15, 16, 17, 513, 1100}) {
      for (int k : {1, 3, 4, 9, 130}) {
        const auto a = random_values<float>(size_t(m) * k, 21);
        const auto b = random_values<float>(size_t(k) * n, 22);
        std::vector<float> c2 = random_values<float>(size_t(m) * n, 23), c5 = c2;
        const float beta = m % 2 ? 0.0f : 0.5f;
        f32_gemv_rows_avx2_fma(m, n, k, a.data(), k, 1, b.data(), n, 1.5f, beta, c2.data(), n, 1);
        f32_gemv_rows_avx512f(m, n, k, a.data(), k, 1, b.data(), n, 1.5f, beta, c5.data(), n, 1);
        for (size_t i = 0; i < c2.size(); ++i) {
          ASSERT_EQ(c2[i], c5[i]) << m << "x" << n << "x" << k << " element " << i;
        }
      }
    }
  }
}

// The epilogue (row and column bias, residual, clamp) on every path the host has:
// against a double reference, and the paths against each other after the
// same epilogue (it adds in eager's order: (A·B + bias) + residual).
TEST(GemmTest, EpilogueOnTheRegistersGivesApplysBits) {
  // Full tiles of the last k-block take the epilogue inside the AVX2/AVX-512
  // microkernel (f32_gemm_*_ep); it must give the bits of the plain GEMM
  // followed by GemmEpilogue::apply, also after earlier k-blocks (beta 1)
  // and with alpha, beta and C's old values in play. Edge tiles mix in.
  const Problem sizes[] = {{64, 96, 300, false, false, false, 0.75, 0.5},
                           {37, 70, 50, false, false, false, 1, 0},
                           {48, 64, 129, false, true, false, 1.5, 0}};
  for (const Problem& p : sizes) {
    const auto a = random_values<float>(size_t(p.m) * p.k, 41);
    const auto b = random_values<float>(size_t(p.k) * p.n, 42);
    const auto bias = random_values<float>(size_t(p.m), 43);
    const auto res = random_values<float>(size_t(p.m) * p.n, 44);
    const auto col = random_values<float>(size_t(p.n), 45);
    const auto c0 = random_values<float>(size_t(p.m) * p.n, 46);
    const int64_t b_rs = p.b_trans ? 1 : p.n, b_cs = p.b_trans ? p.k : 1;
    const StridedMatrix<float> am{a.data(), p.k, 1}, bm{b.data(), b_rs, b_cs};
    GemmEpilogue<float> ep{};
    ep.row_bias = bias.data();
    ep.col_bias = col.data();
    ep.residual = res.data();
    ep.res_rs = p.n;
    ep.res_cs = 1;
    ep.clamp = true;
    ep.lo = -1.0f;
    ep.hi = 1.5f;
    const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
    for (Path path : {Path::kAvx2, Path::kAvx512}) {
      if (path == Path::kAvx2 && host_isa() < Isa::kAvx2) continue;
      if (path == Path::kAvx512 && host_isa() < Isa::kAvx512) continue;
      std::vector<float> fused = c0, after = c0;
      if (path == Path::kAvx2) {
        gemm_f32_avx2_fma(p.m, p.n, p.k, am, bm, alpha, beta, fused.data(), p.n, 1, &ep);
        gemm_f32_avx2_fma(p.m, p.n, p.k, am, bm, alpha, beta, after.data(), p.n, 1);
      } else {
        gemm_f32_avx512f(p.m, p.n, p.k, am, bm, alpha, beta, fused.data(), p.n, 1, &ep);
        gemm_f32_avx512f(p.m, p.n, p.k, am, bm, alpha, beta, after.data(), p.n, 1);
      }
      ep.apply(p.m, p.n, after.data(), p.n, 1);
      for (size_t i = 0; i < fused.size(); ++i) {
        ASSERT_EQ(fused[i], after[i]) << "element " << i << " of " << p.m << "x" << p.n << "x"
                                      << p.k << (path == Path::kAvx2 ? " (AVX2)" : " (AVX-512)");
      }
    }
  }
}

TEST(GemmTest, EpilogueAddsBiasAndResidualThenClamps) {
  const Problem sizes[] = {{1, 1, 1, false, false, false, 1, 0},
                           {7, 17, 129, false, false, false, 1, 0},
                           {73, 97, 257, false, false, true, 1, 0},
                           {150, 3, 140, false, true, false, 1, 0}};
  for (const Problem& p : sizes) {
    const auto a = random_values<float>(size_t(p.m) * p.k, 31);
    const auto b = random_values<float>(size_t(p.k) * p.n, 32);
    const auto bias = random_values<float>(size_t(p.m) * 2, 33);  // Stride 2.
    const auto res = random_values<float>(size_t(p.m) * p.n, 34);
    const auto col = random_values<float>(size_t(p.n), 35);
    const int64_t b_rs = p.b_trans ? 1 : p.n, b_cs = p.b_trans ? p.k : 1;
    const int64_t c_rs = p.c_trans ? 1 : p.n, c_cs = p.c_trans ? p.m : 1;
    const StridedMatrix<float> am{a.data(), p.k, 1}, bm{b.data(), b_rs, b_cs};
    GemmEpilogue<float> ep{};
    ep.row_bias = bias.data();
    ep.bias_stride = 2;
    ep.col_bias = col.data();
    ep.residual = res.data();
    ep.res_rs = p.n;  // Row-major whatever C's layout is.
    ep.res_cs = 1;
    ep.clamp = true;
    ep.lo = -0.25f;
    ep.hi = 0.5f;
    std::vector<std::vector<float>> results;
    for (Path path : {Path::kPortable, Path::kAvx2, Path::kAvx512}) {
      if (path == Path::kAvx2 && host_isa() < Isa::kAvx2) continue;
      if (path == Path::kAvx512 && host_isa() < Isa::kAvx512) continue;
      std::vector<float> c(size_t(p.m) * p.n, std::nanf(""));  // beta 0 ignores C.
      if (path == Path::kPortable) {
        gemm_portable<float>(p.m, p.n, p.k, am, bm, 1.0f, 0.0f, c.data(), c_rs, c_cs, &ep);
      } else if (path == Path::kAvx2) {
        gemm_f32_avx2_fma(p.m, p.n, p.k, am, bm, 1.0f, 0.0f, c.data(), c_rs, c_cs, &ep);
      } else {
        gemm_f32_avx512f(p.m, p.n, p.k, am, bm, 1.0f, 0.0f, c.data(), c_rs, c_cs, &ep);
      }
      int clamped = 0;
      for (int i = 0; i < p.m; ++i) {
        for (int j = 0; j < p.n; ++j) {
          double s = 0;
          for (int q = 0; q < p.k; ++q) s += double(a[i * p.k + q]) * b[q * b_rs + j * b_cs];
          const double raw = s + bias[i * 2] + col[j] + res[i * p.n + j];
          const double want = std::fmin(std::fmax(raw, -0.25), 0.5);
          clamped += raw < -0.25 || raw > 0.5;
          ASSERT_NEAR(c[i * c_rs + j * c_cs], want, 2e-6 * (p.k + 3))
              << "element " << i << "," << j << " of " << p.m << "x" << p.n << "x" << p.k;
        }
      }
      if (p.m * p.n > 16) {
        EXPECT_GT(clamped, 0) << "the clamp was never exercised";
      }
      results.push_back(std::move(c));
    }
    // The ISA paths give the same bits (the epilogue is the same scalar code).
    for (size_t r = 2; r < results.size(); ++r) {
      EXPECT_EQ(results[1], results[r]);
    }
  }
}

// The microkernels that also prefetch the next B strip (gemm_blocked_packed_b's
// full tiles) give the bits of the plain ones, with and without the
// epilogue, for depths that do and do not fill a prefetch group and for
// more lines than groups, none, or a null address.
TEST(GemmTest, PrefetchingMicrokernelsGiveThePlainBits) {
  const auto a = random_values<float>(size_t(8) * 300, 61);
  const auto b = random_values<float>(size_t(300) * 32, 62);
  const auto c0 = random_values<float>(size_t(8) * 32, 63);
  const auto bias = random_values<float>(8, 64);
  const auto next = random_values<float>(size_t(300) * 32, 65);
  GemmEpilogue<float> ep{};
  ep.row_bias = bias.data();
  ep.clamp = true;
  ep.lo = -0.5f;
  ep.hi = 0.75f;
  int checked = 0;
  for (Path path : {Path::kAvx2, Path::kAvx512}) {
    if (path == Path::kAvx2 && host_isa() < Isa::kAvx2) continue;
    if (path == Path::kAvx512 && host_isa() < Isa::kAvx512) continue;
    const int64_t nr = path == Path::kAvx512 ? 32 : 16;
    for (int64_t kc : {0, 1, 7, 8, 9, 64, 256, 300}) {
      for (int64_t lines : {int64_t{0}, int64_t{3}, int64_t{1000}}) {
        for (const bool with_ep : {false, true}) {
          for (const float beta : {0.0f, 0.5f}) {
            SCOPED_TRACE(::testing::Message() << (path == Path::kAvx512 ? "AVX-512" : "AVX2")
                                              << " kc " << kc << " lines " << lines << " ep "
                                              << with_ep << " beta " << beta);
            std::vector<float> plain = c0, fetching = c0;
            const void* pf = lines == 0 && kc % 2 == 0 ? nullptr : next.data();
            if (path == Path::kAvx512) {
              if (with_ep) {
                f32_gemm_8x32_avx512f_ep(kc, a.data(), b.data(), plain.data(), nr, 1.5f, beta, ep);
              } else {
                f32_gemm_8x32_avx512f(kc, a.data(), b.data(), plain.data(), nr, 1.5f, beta);
              }
              f32_gemm_8x32_avx512f_pf(kc, a.data(), b.data(), fetching.data(), nr, 1.5f, beta,
                                       with_ep ? &ep : nullptr, pf, lines);
            } else {
              if (with_ep) {
                f32_gemm_6x16_avx2_fma_ep(kc, a.data(), b.data(), plain.data(), nr, 1.5f, beta,
                                          ep);
              } else {
                f32_gemm_6x16_avx2_fma(kc, a.data(), b.data(), plain.data(), nr, 1.5f, beta);
              }
              f32_gemm_6x16_avx2_fma_pf(kc, a.data(), b.data(), fetching.data(), nr, 1.5f, beta,
                                        with_ep ? &ep : nullptr, pf, lines);
            }
            // The tile is 8 (6) rows of nr columns; the rest of c0 untouched.
            for (size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(plain[i], fetching[i]) << i;
            ++checked;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "CPU without AVX2";
}

// A weight packed at prepare (PackedB: gemm_blocked_packed_b, whose full tiles
// prefetch) against float64, with the epilogue, on shapes with two A blocks
// (m > kMC), several column blocks and depth blocks and edge tiles; the AVX2
// and AVX-512 paths (each on panels of its own tile) give the same bits.
TEST(GemmTest, WeightPackedAtPrepareMatchesReferenceOnEveryTile) {
  struct Shape {
    int m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1}, {8, 32, 256}, {37, 100, 300}, {150, 200, 513}, {145, 64, 7}};
  for (const Shape& s : shapes) {
    const auto a = random_values<float>(size_t(s.m) * s.k, 71);
    const auto b = random_values<float>(size_t(s.k) * s.n, 72);
    const auto col = random_values<float>(size_t(s.n), 73);
    const auto c0 = random_values<float>(size_t(s.m) * s.n, 74);
    GemmEpilogue<float> ep{};
    ep.col_bias = col.data();
    std::vector<double> want(c0.size());
    for (int i = 0; i < s.m; ++i) {
      for (int j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int q = 0; q < s.k; ++q) acc += double(a[size_t(i) * s.k + q]) * b[size_t(q) * s.n + j];
        want[size_t(i) * s.n + j] = acc + 0.5 * c0[size_t(i) * s.n + j] + col[j];
      }
    }
    const StridedMatrix<float> am{a.data(), s.k, 1}, bm{b.data(), s.n, 1};
    std::vector<std::vector<float>> results;
    for (Path path : {Path::kAvx2, Path::kAvx512}) {
      if (path == Path::kAvx2 && host_isa() < Isa::kAvx2) continue;
      if (path == Path::kAvx512 && host_isa() < Isa::kAvx512) continue;
      const int tile = path == Path::kAvx512 ? 32 : 16;
      std::vector<float> storage(
          static_cast<size_t>(packed_panels_size(s.n, s.k, tile, GemmBlocking<float>::kNC)));
      if (tile == 32) {
        pack_b_panels<32, float>(bm, s.k, s.n, storage.data());
      } else {
        pack_b_panels<16, float>(bm, s.k, s.n, storage.data());
      }
      const PackedB<float, StridedMatrix<float>> packed{
          PackedPanels<float>{storage.data(), s.n, s.k, tile}, bm};
      std::vector<float> c = c0;
      if (path == Path::kAvx512) {
        gemm_f32_avx512f(s.m, s.n, s.k, am, packed, 1.0f, 0.5f, c.data(), s.n, 1, &ep);
      } else {
        gemm_f32_avx2_fma(s.m, s.n, s.k, am, packed, 1.0f, 0.5f, c.data(), s.n, 1, &ep);
      }
      for (size_t i = 0; i < c.size(); ++i) {
        ASSERT_NEAR(c[i], want[i], 2e-6 * (s.k + 2))
            << "element " << i << " of " << s.m << "x" << s.n << "x" << s.k << " tile " << tile;
      }
      results.push_back(std::move(c));
    }
    if (results.size() == 2) {
      for (size_t i = 0; i < results[0].size(); ++i) {
        ASSERT_EQ(results[0][i], results[1][i]) << "element " << i << " of " << s.m << "x" << s.n
                                                << "x" << s.k;
      }
    }
  }
}

TEST(GemmTest, DispatchedTileFollowsTheIsa) {
  const Isa isa = cpu_isa();
  EXPECT_EQ(gemm_mr<float>(), isa >= Isa::kAvx512 ? 8 : isa >= Isa::kAvx2 ? 6 : 8);
  EXPECT_EQ(gemm_nr<float>(), isa >= Isa::kAvx512 ? 32 : isa >= Isa::kAvx2 ? 16 : 8);
  EXPECT_EQ(cpu_has_avx512f(), isa >= Isa::kAvx512);
}

TEST(GemmTest, BetaZeroIgnoresNanInC) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<float> c = {NAN};
  gemm<float>(1, 1, 2, StridedMatrix<float>{a.data(), 2, 1}, StridedMatrix<float>{b.data(), 1, 1},
              1.0f, 0.0f, c.data(), 1, 1);
  EXPECT_EQ(c[0], 11.0f);
  std::vector<float> big_a(7 * 9, 1.0f), big_b(9 * 17, 1.0f), big_c(7 * 17, NAN);
  gemm<float>(7, 17, 9, StridedMatrix<float>{big_a.data(), 9, 1},
              StridedMatrix<float>{big_b.data(), 17, 1}, 1.0f, 0.0f, big_c.data(), 17, 1);
  for (float v : big_c) ASSERT_EQ(v, 9.0f);
}

TEST(GemvTest, SmallMMatchesReference) {
  for (int m = 1; m <= kGemvMaxM; ++m) {
    for (int n : {1, 3, 10, 17, 513, 1100}) {
      for (int k : {1, 3, 4, 9, 130}) {
        for (bool b_trans : {false, true}) {
          for (bool c_trans : {false, true}) {
            const Problem p{m, n, k, false, b_trans, c_trans, 1.5, m % 2 ? 0.0 : 0.5};
            check<float>(p, Path::kSmallM);
            check<double>(p, Path::kSmallM);
          }
        }
      }
    }
  }
  // A column-major A with row-major B streams B as well.
  check<float>({3, 40, 33, true, false, false, 1, 0}, Path::kSmallM);
}

TEST(GemvTest, DeclinesWhatItCannotStream) {
  const std::vector<float> a(4 * 6), b(6 * 5 * 2);
  std::vector<float> c(4 * 5);
  // B with neither stride 1 (every other column of a wider matrix, rows strided too).
  EXPECT_FALSE(gemm_small_m<float>(1, 5, 6, a.data(), 6, 1, b.data(), 10, 2, 1.0f, 0.0f,
                                   c.data(), 5, 1));
  // Column-contiguous B needs a row-contiguous A for its dot products.
  EXPECT_FALSE(gemm_small_m<float>(2, 5, 6, a.data(), 1, 4, b.data(), 1, 6, 1.0f, 0.0f,
                                   c.data(), 5, 1));
  EXPECT_FALSE(gemm_small_m<float>(5, 5, 6, a.data(), 6, 1, b.data(), 5, 1, 1.0f, 0.0f,
                                   c.data(), 5, 1));
  EXPECT_FALSE(gemm_small_m<float>(1, 5, 0, a.data(), 6, 1, b.data(), 5, 1, 1.0f, 0.0f,
                                   c.data(), 5, 1));
}

}  // namespace
}  // namespace ember::kernels::portable
