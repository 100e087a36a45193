// The bf16 implicit convolution on AMX tiles (conv_bf16_amx.h) against a
// float64 convolution of the bf16-rounded operands, over strides, dilation,
// padding, channel groups, partial output-channel strips and planes wider
// than a block, with the GEMM epilogue (bias, residual, clamp), on 1 and 2
// threads (the same bits). Each element must be within 1e-5 · (Σ|x·w| + 1),
// the bound every bf16 kernel meets (docs/bf16.md). Skipped off AMX hosts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/portable/util/conv_bf16_amx.h"
#include "kernels/portable/util/half.h"
#include "runtime/kernel/thread_pool.h"

namespace ember::kernels::portable {
namespace {

struct Case {
  int64_t cin, cout, ih, iw, kh, kw, sh, sw, p, d;
};

struct AlignedFree {
  void operator()(void* p) const { ::operator delete(p, std::align_val_t{64}); }
};

float round_bf16(float v) { return static_cast<float>(BFloat16(v)); }

TEST(ConvBf16AmxTest, MatchesTheRoundedProduct) {
  if (!conv_bf16_amx_applies(32, 1, 3, 3)) GTEST_SKIP() << "no AMX tiles on this host";
  const Case cases[] = {
      {64, 48, 10, 9, 3, 3, 1, 1, 1, 1},   {32, 40, 13, 12, 3, 3, 2, 2, 1, 1},
      {96, 70, 11, 14, 5, 5, 1, 1, 4, 2},  {32, 33, 30, 29, 3, 3, 1, 1, 1, 1},
      {64, 64, 7, 7, 3, 3, 1, 1, 1, 1},    {32, 16, 9, 17, 1, 3, 1, 2, 0, 1},
  };
  ThreadPool* pool2 = thread_pool_create(2);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.cin << "→" << c.cout << " " << c.ih << "x" << c.iw
                                      << " k" << c.kh << "x" << c.kw << " s" << c.sh);
    const int64_t oh = (c.ih + 2 * c.p - c.d * (c.kh - 1) - 1) / c.sh + 1;
    const int64_t ow = (c.iw + 2 * c.p - c.d * (c.kw - 1) - 1) / c.sw + 1;
    std::vector<float> x(static_cast<size_t>(c.cin * c.ih * c.iw)), bias(c.cout);
    std::vector<float> res(static_cast<size_t>(c.cout * oh * ow));
    std::vector<uint16_t> w(static_cast<size_t>(c.cout * c.cin * c.kh * c.kw));
    for (auto& v : x) v = nd(rng);
    for (auto& v : bias) v = nd(rng);
    for (auto& v : res) v = nd(rng);
    for (auto& v : w) v = BFloat16(nd(rng)).bits;
    const ConvBf16AmxGeometry g{c.cin, c.ih, c.iw, c.kh, c.kw, oh, ow,
                                c.sh,  c.sw, c.p,  c.p,  c.d,  c.d};
    std::unique_ptr<void, AlignedFree> packed(::operator new(
        conv_bf16_amx_weight_bytes(c.cout, c.cin, c.kh, c.kw), std::align_val_t{64}));
    const ConvBf16AmxWeights pw =
        conv_bf16_amx_pack(w.data(), c.cout, c.cin, c.kh, c.kw, packed.get());
    GemmEpilogue<float> ep{};
    ep.row_bias = bias.data();
    ep.residual = res.data();
    ep.res_rs = oh * ow;
    ep.res_cs = 1;
    ep.clamp = true;
    ep.lo = -4.0f;
    ep.hi = 6.0f;
    std::vector<float> first;
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool2}) {
      KernelContext ctx("conv_bf16_amx");
      ctx.set_thread_pool(pool);
      std::unique_ptr<void, AlignedFree> scratch(::operator new(
          conv_bf16_amx_scratch_bytes(g, ctx.threads()), std::align_val_t{64}));
      std::vector<float> out(res.size(), NAN);
      conv_bf16_amx_run(ctx, pw, g, x.data(), &ep, out.data(), scratch.get());
      if (first.empty()) {
        first = out;
      } else {
        EXPECT_EQ(std::memcmp(first.data(), out.data(), out.size() * sizeof(float)), 0)
            << "1 and 2 threads differ";
      }
      int64_t bad = 0;
      for (int64_t m = 0; m < c.cout; ++m) {
        for (int64_t oy = 0; oy < oh; ++oy) {
          for (int64_t ox = 0; ox < ow; ++ox) {
            double sum = 0, mag = 0;
            for (int64_t ci = 0; ci < c.cin; ++ci) {
              for (int64_t ky = 0; ky < c.kh; ++ky) {
                for (int64_t kx = 0; kx < c.kw; ++kx) {
                  const int64_t iy = oy * c.sh - c.p + ky * c.d, ix = ox * c.sw - c.p + kx * c.d;
                  if (iy < 0 || iy >= c.ih || ix < 0 || ix >= c.iw) continue;
                  const double xv = round_bf16(x[(ci * c.ih + iy) * c.iw + ix]);
                  BFloat16 wb;
                  wb.bits = w[((m * c.cin + ci) * c.kh + ky) * c.kw + kx];
                  const double wv = static_cast<float>(wb);
                  sum += xv * wv;
                  mag += std::fabs(xv * wv);
                }
              }
            }
            const int64_t at = m * oh * ow + oy * ow + ox;
            double want = sum + bias[m] + res[at];
            want = want < -4.0 ? -4.0 : want > 6.0 ? 6.0 : want;
            if (!(std::fabs(out[at] - want) <= 1e-5 * (mag + 1.0))) ++bad;
          }
        }
      }
      EXPECT_EQ(bad, 0) << "elements outside the bound";
    }
  }
  if (pool2 != nullptr) thread_pool_destroy(pool2);
}

}  // namespace
}  // namespace ember::kernels::portable
