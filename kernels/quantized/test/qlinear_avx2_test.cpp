// The token-major int16 GEMM of the linear layers on AVX2 (qlinear_avx2.h)
// against a plain int32 reference: shapes that leave partial tiles of tokens
// and panels of channels, odd depths, int8 and float epilogues, 1 and 2
// threads, token blocks (a deep k). The sums are exact, so the outputs must
// be the reference's bits. Runs wherever the host has AVX2, whatever
// EMBER_ISA says (the op picks it only when qgemm_kind() is kAvx2).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/util/qlinear_avx2.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::quantized {
namespace {

void check(int64_t tokens, int64_t k, int64_t n, bool with_offset, uint32_t seed) {
  SCOPED_TRACE("tokens " + std::to_string(tokens) + " k " + std::to_string(k) + " n " +
               std::to_string(n));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> w8(-127, 127), x8(-128, 127), z(-20, 20);
  std::vector<int8_t> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(tokens * k));
  for (auto& v : w) v = static_cast<int8_t>(w8(rng));
  for (auto& v : x) v = static_cast<int8_t>(x8(rng));
  const int32_t zx = z(rng), zy = z(rng);
  std::uniform_real_distribution<float> sd(1e-4f, 4e-4f), od(-20.f, 20.f);
  std::vector<float> scale, offset;
  for (int64_t i = 0; i < n; ++i) {
    scale.push_back(sd(rng));
    offset.push_back(od(rng));
  }
  std::vector<int16_t> packed(qlinear16_packed_bytes(n, k) / sizeof(int16_t));
  const QLinear16Weights lw = qlinear16_pack_weights(w.data(), n, k, packed.data());
  std::vector<int16_t> rows(qlinear16_rows_bytes(tokens, k) / sizeof(int16_t) + 1);
  qlinear16_pack_rows(x.data(), tokens, k, zx, rows.data());
  ThreadPool* pool2 = thread_pool_create(2);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool2}) {
    SCOPED_TRACE(pool ? "2 threads" : "1 thread");
    KernelContext ctx("qlinear16");
    ctx.set_thread_pool(pool);
    std::vector<int8_t> q(static_cast<size_t>(tokens * n), int8_t{99});
    std::vector<float> f(static_cast<size_t>(tokens * n), -1.0f);
    QEpilogue e;
    e.scale = scale.data();
    e.offset = with_offset ? offset.data() : nullptr;
    e.zp = zy;
    e.lo = -100;  // A clamp narrower than int8's, as a fused activation makes.
    e.hi = 120;
    e.c = q.data();
    qlinear16_run(ctx, lw, rows.data(), tokens, e);
    e.float_out = true;
    e.scale_mul = 0.5f;
    e.c = f.data();
    qlinear16_run(ctx, lw, rows.data(), tokens, e);
    EXPECT_EQ(ctx.failure(), Error::Ok);
    int bad = 0;
    for (int64_t t = 0; t < tokens && bad < 5; ++t) {
      for (int64_t c = 0; c < n && bad < 5; ++c) {
        int32_t acc = 0;
        for (int64_t kk = 0; kk < k; ++kk) acc += w[c * k + kk] * (x[t * k + kk] - zx);
        const float o = with_offset ? offset[c] : 0.0f;
        const float v = static_cast<float>(acc) * scale[c] + o;
        const float r = std::nearbyint(std::fmin(std::fmax(v, float(-100 - zy)), float(120 - zy)));
        const auto want_q = static_cast<int8_t>(static_cast<int32_t>(r) + zy);
        const float want_f = static_cast<float>(acc) * (scale[c] * 0.5f) + o;
        const size_t at = static_cast<size_t>(t * n + c);
        if (q[at] != want_q || f[at] != want_f) {
          ++bad;
          ADD_FAILURE() << "C[" << t << "][" << c << "]: int8 " << int(q[at]) << " want "
                        << int(want_q) << ", float " << f[at] << " want " << want_f;
        }
      }
    }
  }
  thread_pool_destroy(pool2);
}

bool host_has_avx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

TEST(QLinearAvx2Test, MatchesTheInt32Reference) {
  if (!host_has_avx2()) GTEST_SKIP() << "no AVX2 here";
  const int64_t shapes[][3] = {{1, 1, 1},    {1, 64, 16},   {6, 32, 32},  {13, 37, 45},
                               {7, 4, 17},   {33, 130, 7},  {70, 257, 97}, {5, 3, 200},
                               {128, 96, 64}, {2, 2051, 40}, {17, 1, 33},  {1, 1280, 1000}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    check(s[0], s[1], s[2], seed % 2 == 1, seed);
    ++seed;
  }
}

TEST(QLinearAvx2Test, TokenBlocksOfADeepLayer) {
  if (!host_has_avx2()) GTEST_SKIP() << "no AVX2 here";
  // 256 KiB rows blocks: k 20000 (40000 bytes a row) makes a block of 6
  // tokens, so 50 tokens take nine.
  check(50, 20000, 40, true, 77);
}

TEST(QLinearAvx2Test, PackRowsSubtractTheZeroPointAndPad) {
  if (!host_has_avx2()) GTEST_SKIP() << "no AVX2 here";
  // 17 values a row: one vector of 16 and a scalar tail, then a pad.
  std::vector<int8_t> x(34);
  for (int i = 0; i < 34; ++i) x[static_cast<size_t>(i)] = static_cast<int8_t>(i * 7 - 120);
  std::vector<int16_t> rows(36, int16_t{99});
  qlinear16_pack_rows(x.data(), 2, 17, -5, rows.data());
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < 17; ++i) {
      EXPECT_EQ(rows[static_cast<size_t>(t * 18 + i)], x[static_cast<size_t>(t * 17 + i)] + 5);
    }
    EXPECT_EQ(rows[static_cast<size_t>(t * 18 + 17)], 0);
  }
}

}  // namespace
}  // namespace ember::kernels::quantized
