// The int8 GEMM of the fused quantized ops (qgemm.h): every microkernel the
// host can run (baseline always; AVX2 and AVX-512 VNNI when present, whatever
// EMBER_ISA says) against a plain int32 reference, over shapes that leave
// partial tiles in every direction, linear rows and convolution windows
// (padding, stride, dilation), int8 and float epilogues, and 1 or 2 threads.
// The sums are exact, so every kind must give the reference's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/test/qgemm_kinds.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::quantized {
namespace {

struct Problem {
  int64_t m, k, n;
  std::vector<int8_t> w, x;  // w: m×k; x: n×k rows (kRows) or the conv input.
  std::vector<float> scale, offset;
  int32_t zx, zy, lo, hi;
};

Problem make_problem(int64_t m, int64_t k, int64_t n, int64_t x_elems, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> w8(-127, 127), x8(-128, 127), z(-20, 20);
  Problem p{m, k, n, {}, {}, {}, {}, z(rng), z(rng), -128, 127};
  p.w.resize(static_cast<size_t>(m * k));
  for (auto& v : p.w) v = static_cast<int8_t>(w8(rng));
  p.x.resize(static_cast<size_t>(x_elems));
  for (auto& v : p.x) v = static_cast<int8_t>(x8(rng));
  std::uniform_real_distribution<float> s(1e-4f, 4e-4f), o(-20.f, 20.f);
  for (int64_t i = 0; i < m; ++i) {
    p.scale.push_back(s(rng));
    p.offset.push_back(o(rng));
  }
  return p;
}

// Runs one kind and returns C (m×n, row-major) as int8 or float bytes.
template <typename Out>
std::vector<Out> run(QGemmKind kind, const Problem& p, const QActivations& act, bool float_out,
                     ThreadPool* pool) {
  std::vector<uint8_t> packed(qgemm_packed_bytes(kind, p.m, p.k));
  std::vector<int32_t> sums(static_cast<size_t>(p.m));
  const QPackedWeights w =
      qgemm_pack_weights(kind, p.w.data(), p.m, p.k, p.k, packed.data(), sums.data());
  KernelContext ctx("qgemm");
  ctx.set_thread_pool(pool);
  std::vector<uint8_t> scratch(qgemm_scratch_bytes(w, act.n, ctx.threads()) + 1);
  std::vector<Out> c(static_cast<size_t>(p.m * p.n), Out{});
  QEpilogue e;
  e.scale = p.scale.data();
  e.scale_mul = float_out ? 0.5f : 1.0f;
  e.offset = p.offset.data();
  e.float_out = float_out;
  e.zp = p.zy;
  e.lo = p.lo;
  e.hi = p.hi;
  e.c = c.data();
  e.c_rs = p.n;
  e.c_cs = 1;
  qgemm_run(ctx, w, act, e, scratch.data());
  EXPECT_EQ(ctx.failure(), Error::Ok);
  return c;
}

// X[k][n] of the activations, zx where a window reads padding.
int32_t x_at(const Problem& p, const QActivations& a, int64_t kk, int64_t n) {
  if (a.kind == QActivations::Kind::kRows) return p.x[static_cast<size_t>(n * a.ld + kk)];
  const int64_t kx = kk % a.kw, ky = (kk / a.kw) % a.kh, ci = kk / (a.kw * a.kh);
  const int64_t oy = n / a.ow, ox = n % a.ow;
  const int64_t iy = oy * a.stride_h - a.pad_h + ky * a.dil_h;
  const int64_t ix = ox * a.stride_w - a.pad_w + kx * a.dil_w;
  if (iy < 0 || iy >= a.ih || ix < 0 || ix >= a.iw) return a.zx;
  return p.x[static_cast<size_t>((ci * a.ih + iy) * a.iw + ix)];
}

void check_all_kinds(const Problem& p, const QActivations& act) {
  std::vector<int32_t> acc(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      int32_t s = 0;
      for (int64_t kk = 0; kk < p.k; ++kk) s += p.w[i * p.k + kk] * (x_at(p, act, kk, j) - act.zx);
      acc[static_cast<size_t>(i * p.n + j)] = s;
    }
  }
  ThreadPool* pool2 = thread_pool_create(2);
  for (QGemmKind kind : host_gemm_kinds()) {
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool2}) {
      SCOPED_TRACE(std::string(qgemm_kind_name(kind)) + (pool ? " 2 threads" : " 1 thread"));
      const auto q = run<int8_t>(kind, p, act, false, pool);
      const auto f = run<float>(kind, p, act, true, pool);
      int bad = 0;
      for (int64_t i = 0; i < p.m && bad < 5; ++i) {
        for (int64_t j = 0; j < p.n && bad < 5; ++j) {
          const size_t at = static_cast<size_t>(i * p.n + j);
          const float v = static_cast<float>(acc[at]) * p.scale[i] + p.offset[i];
          float r = std::nearbyint(std::fmin(std::fmax(v, float(p.lo - p.zy)), float(p.hi - p.zy)));
          const auto want_q = static_cast<int8_t>(static_cast<int32_t>(r) + p.zy);
          const float want_f = static_cast<float>(acc[at]) * (p.scale[i] * 0.5f) + p.offset[i];
          if (q[at] != want_q || f[at] != want_f) {
            ++bad;
            ADD_FAILURE() << "C[" << i << "][" << j << "]: int8 " << int(q[at]) << " want "
                          << int(want_q) << ", float " << f[at] << " want " << want_f;
          }
        }
      }
    }
  }
  if (pool2 != nullptr) thread_pool_destroy(pool2);
}

TEST(QGemmTest, LinearRowsAllKindsMatchTheReference) {
  const int64_t shapes[][3] = {{1, 1, 1},   {8, 32, 32},  {13, 37, 45}, {6, 4, 16},
                               {33, 130, 7}, {70, 257, 97}, {5, 3, 200},
                               {96, 576, 130}};  // AMX: whole strips, 9 chunks, a partial strip.
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    SCOPED_TRACE("m " + std::to_string(s[0]) + " k " + std::to_string(s[1]) + " n " +
                 std::to_string(s[2]));
    const Problem p = make_problem(s[0], s[1], s[2], s[1] * s[2], seed++);
    QActivations a;
    a.kind = QActivations::Kind::kRows;
    a.x = p.x.data();
    a.zx = p.zx;
    a.n = s[2];
    a.ld = s[1];
    check_all_kinds(p, a);
  }
}

TEST(QGemmTest, ConvolutionWindowsAllKindsMatchTheReference) {
  struct Case { int64_t c, ih, iw, m, kh, kw, sh, sw, ph, pw, dh, dw; };
  const Case cases[] = {
      {3, 9, 11, 10, 3, 3, 1, 1, 1, 1, 1, 1}, {8, 7, 7, 16, 1, 1, 1, 1, 0, 0, 1, 1},
      {5, 12, 10, 9, 3, 3, 2, 2, 1, 1, 1, 1}, {4, 10, 13, 7, 3, 2, 1, 2, 2, 0, 2, 1},
      {2, 40, 3, 33, 5, 1, 1, 1, 2, 0, 1, 1}, {16, 5, 5, 8, 5, 5, 1, 1, 2, 2, 1, 1},
      // 1×1 stride 1 read in place: whole strips and a partial one; channels a
      // multiple of the VNNI group and not.
      {37, 9, 8, 11, 1, 1, 1, 1, 0, 0, 1, 1}, {64, 8, 16, 24, 1, 1, 1, 1, 0, 0, 1, 1},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    QActivations a;
    a.kind = QActivations::Kind::kConv;
    a.channels = c.c;
    a.ih = c.ih;
    a.iw = c.iw;
    a.kh = c.kh;
    a.kw = c.kw;
    a.stride_h = c.sh;
    a.stride_w = c.sw;
    a.pad_h = c.ph;
    a.pad_w = c.pw;
    a.dil_h = c.dh;
    a.dil_w = c.dw;
    a.oh = (c.ih + 2 * c.ph - c.dh * (c.kh - 1) - 1) / c.sh + 1;
    a.ow = (c.iw + 2 * c.pw - c.dw * (c.kw - 1) - 1) / c.sw + 1;
    a.n = a.oh * a.ow;
    SCOPED_TRACE("conv c " + std::to_string(c.c) + " " + std::to_string(c.ih) + "x" +
                 std::to_string(c.iw) + " k " + std::to_string(c.kh) + "x" + std::to_string(c.kw));
    const Problem p = make_problem(c.m, c.c * c.kh * c.kw, a.n, c.c * c.ih * c.iw, seed++);
    a.x = p.x.data();
    a.zx = p.zx;
    check_all_kinds(p, a);
  }
}

TEST(QGemmTest, RequantizeRoundsHalfToEvenAndClamps) {
  EXPECT_EQ(requantize(0.5f, -128.f, 127.f, 0), 0);
  EXPECT_EQ(requantize(1.5f, -128.f, 127.f, 0), 2);
  EXPECT_EQ(requantize(-2.5f, -128.f, 127.f, 0), -2);
  EXPECT_EQ(requantize(1e9f, -128.f - 3, 127.f - 3, 3), 127);
  EXPECT_EQ(requantize(-1e9f, -128.f - 3, 127.f - 3, 3), -128);
  EXPECT_EQ(requantize(-7.f, 0.f - 5, 127.f - 5, 5), 0);  // A fused relu: zero point is the floor.
}

// The tiles are chosen only where their padding adds at most half again to
// the multiply-adds (32-row strips, k in 64s), and never off AMX hosts.
TEST(QGemmTest, AmxPaysOnlyForLittlePadding) {
  if (!qgemm_amx_available()) {
    EXPECT_FALSE(qgemm_amx_pays(256, 256));
    return;
  }
  EXPECT_TRUE(qgemm_amx_pays(256, 256));
  EXPECT_TRUE(qgemm_amx_pays(32, 96));    // k 96 → 128: 1.33×.
  EXPECT_TRUE(qgemm_amx_pays(160, 576));  // MobileNetV2's 576 → 160 projection.
  EXPECT_FALSE(qgemm_amx_pays(96, 16));   // 16 channels padded to 64: 4×.
  EXPECT_FALSE(qgemm_amx_pays(192, 32));  // 2×.
  EXPECT_FALSE(qgemm_amx_pays(24, 144));  // 1.33 · 1.33 = 1.78×.
  EXPECT_FALSE(qgemm_amx_pays(0, 64));
}

}  // namespace
}  // namespace ember::kernels::quantized
