// The 8da4w / 8da8w linear kernels (qdyn_intx.h): every kind the host can run
// (baseline always; AVX2 and AVX-512 VNNI when present, whatever EMBER_ISA
// says) against a float64 reference of the same integers, for int4 and int8
// weights, groups of 32, multiples of 64 and others (the plain loops), K not
// a multiple of 64, and 1 to 9 rows (the register tiles of 1-4 rows and their
// remainders). The int32 sums are exact; only the float sums of the groups
// differ, so the bound is relative to the output's magnitude.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/quantized/util/qdyn_intx.h"

namespace ember::kernels::quantized {
namespace {

void* align64(std::vector<uint8_t>& mem) {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(mem.data()) + 63) &
                                 ~uintptr_t{63});
}

std::vector<QGemmKind> host_kinds() {
  std::vector<QGemmKind> kinds{QGemmKind::kBaseline};
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    kinds.push_back(QGemmKind::kAvx2);
  }
#endif
  if (qgemm_detail::host_has_avx512_vnni()) kinds.push_back(QGemmKind::kAvx512Vnni);
  return kinds;
}

struct Case {
  int bits;
  int64_t n, k, group, rows;
};

void check(const Case& c, QGemmKind kind, uint32_t seed) {
  std::mt19937 rng(seed);
  const int lo = c.bits == 4 ? -8 : -128, hi = c.bits == 4 ? 7 : 127;
  std::uniform_int_distribution<int> wd(lo, hi);
  std::uniform_real_distribution<float> xd(-3.0f, 2.0f), sd(0.001f, 0.02f);
  std::vector<int> w(static_cast<size_t>(c.n * c.k));
  for (auto& v : w) v = wd(rng);
  // The file's layout: int8 rows, or two int4 values per byte (+ 8).
  std::vector<uint8_t> file;
  if (c.bits == 8) {
    for (int v : w) file.push_back(static_cast<uint8_t>(static_cast<int8_t>(v)));
  } else {
    for (size_t i = 0; i < w.size(); i += 2) {
      file.push_back(static_cast<uint8_t>((w[i] + 8) | ((w[i + 1] + 8) << 4)));
    }
  }
  const int64_t groups = c.k / c.group;
  std::vector<float> scales(static_cast<size_t>(c.n * groups)), bias(static_cast<size_t>(c.n));
  for (auto& s : scales) s = sd(rng);
  for (auto& b : bias) b = xd(rng);
  std::vector<uint8_t> mem(intx_packed_bytes(c.bits, c.n, c.k, c.group) + 64);
  void* aligned = align64(mem);
  const IntxWeights pw = intx_pack(kind, c.bits, file.data(), scales.data(), c.n, c.k, c.group,
                                   bias.data(), aligned);
  for (int64_t r = 0; r < c.n; r += 7) {
    for (int64_t i = 0; i < c.k; i += 5) {
      ASSERT_EQ(intx_weight_at(pw, r, i), w[static_cast<size_t>(r * c.k + i)]);
    }
  }
  std::vector<float> x(static_cast<size_t>(c.rows * c.k));
  for (auto& v : x) v = xd(rng);
  if (c.rows > 1) {
    for (int64_t i = 0; i < c.k; ++i) x[static_cast<size_t>(c.k + i)] = 0.0f;  // An all-zero row.
  }
  std::vector<uint8_t> u(static_cast<size_t>(c.rows * pw.kp));
  std::vector<float> sx(static_cast<size_t>(c.rows));
  std::vector<int32_t> zx(static_cast<size_t>(c.rows));
  for (int64_t r = 0; r < c.rows; ++r) {
    intx_quantize_row(x.data() + r * c.k, c.k, pw.kp, u.data() + r * pw.kp, &sx[r], &zx[r]);
  }
  std::vector<float> y(static_cast<size_t>(c.rows * c.n), NAN);
  // Two column ranges, as two threads would split them (at a multiple of 16).
  const int64_t mid = c.n / 2 / 16 * 16;
  intx_linear_rows(pw, u.data(), sx.data(), zx.data(), c.rows, 0, mid, y.data(), c.n);
  intx_linear_rows(pw, u.data(), sx.data(), zx.data(), c.rows, mid, c.n, y.data(), c.n);
  double peak = 0.0, worst = 0.0;
  for (int64_t r = 0; r < c.rows; ++r) {
    // The quantized row dequantizes to within one step of x.
    for (int64_t i = 0; i < c.k; ++i) {
      const double dq = (static_cast<double>(u[r * pw.kp + i]) - 128 - zx[r]) * sx[r];
      ASSERT_LE(std::fabs(dq - x[r * c.k + i]), 0.5001 * sx[r]) << r << " " << i;
    }
    for (int64_t n = 0; n < c.n; ++n) {
      double acc = 0.0;
      for (int64_t g = 0; g < groups; ++g) {
        int64_t d = 0;
        for (int64_t i = g * c.group; i < (g + 1) * c.group; ++i) {
          d += (static_cast<int64_t>(u[r * pw.kp + i]) - 128 - zx[r]) * w[n * c.k + i];
        }
        acc += static_cast<double>(scales[n * groups + g]) * static_cast<double>(d);
      }
      const double ref = sx[r] * acc + bias[n];
      peak = std::fmax(peak, std::fabs(ref));
      worst = std::fmax(worst, std::fabs(ref - y[r * c.n + n]));
    }
  }
  EXPECT_LE(worst, 2e-5 * peak) << "kind " << qgemm_kind_name(kind) << " bits " << c.bits
                                << " n " << c.n << " k " << c.k << " group " << c.group
                                << " rows " << c.rows;
}

TEST(QDynIntx, EveryKindMatchesTheReference) {
  const Case cases[] = {
      {4, 37, 128, 32, 1}, {4, 37, 128, 32, 2}, {4, 19, 96, 32, 3}, {4, 40, 256, 64, 4},
      {4, 33, 256, 128, 5}, {4, 17, 384, 384, 9}, {4, 21, 80, 16, 6}, {4, 18, 2, 2, 1},
      {8, 37, 128, 32, 1}, {8, 19, 96, 32, 7}, {8, 35, 192, 192, 4}, {8, 20, 320, 64, 9},
      {8, 9, 24, 8, 3}, {4, 50, 512, 32, 13}, {4, 64, 256, 256, 2}, {8, 33, 160, 32, 4},
  };
  uint32_t seed = 1;
  for (QGemmKind kind : host_kinds()) {
    for (const Case& c : cases) check(c, kind, seed++);
  }
}

// A row whose values spread widely: the int32 group sums stay exact (int8
// weights at their extremes, activations of both signs at full range).
TEST(QDynIntx, ExtremeValuesStayExact) {
  for (QGemmKind kind : host_kinds()) {
    for (int bits : {4, 8}) {
      const int64_t n = 16, k = 1024, group = bits == 4 ? 32 : k;
      const int wmax = bits == 4 ? -8 : -128;
      std::vector<uint8_t> file;
      if (bits == 8) {
        file.assign(static_cast<size_t>(n * k), static_cast<uint8_t>(static_cast<int8_t>(wmax)));
      } else {
        file.assign(static_cast<size_t>(n * k / 2), 0);  // Every nibble 0: -8.
      }
      std::vector<float> scales(static_cast<size_t>(n * (k / group)), 1.0f);
      std::vector<uint8_t> mem(intx_packed_bytes(bits, n, k, group) + 64);
      void* al = align64(mem);
      const IntxWeights pw = intx_pack(kind, bits, file.data(), scales.data(), n, k, group,
                                       nullptr, al);
      std::vector<float> x(static_cast<size_t>(k), -1.0f);
      x[0] = 0.0f;  // max 0, min -1: zero point 127, every other value -128.
      std::vector<uint8_t> u(static_cast<size_t>(pw.kp));
      float sx;
      int32_t zx;
      intx_quantize_row(x.data(), k, pw.kp, u.data(), &sx, &zx);
      std::vector<float> y(static_cast<size_t>(n));
      intx_linear_rows(pw, u.data(), &sx, &zx, 1, 0, n, y.data(), n);
      const double want = static_cast<double>(sx) * (k - 1) * (-128 - zx) * wmax;
      for (int64_t c = 0; c < n; ++c) {
        EXPECT_NEAR(y[c], want, 1e-5 * std::fabs(want)) << qgemm_kind_name(kind) << " " << bits;
      }
    }
  }
}

}  // namespace
}  // namespace ember::kernels::quantized
