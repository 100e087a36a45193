// The NCHW16c convolution (conv_nchw16c.h) against a float64 direct
// convolution, on every row kernel the host runs (portable, AVX2, AVX-512):
// 1×1 (pointwise planes cut into rows, with tails), 3×3 and 7×7 with
// padding, strides 1 and 2, plain NCHW inputs (a stem's few channels), channel counts that are not multiples of 16
// (padded lanes must come out zero), output groups of 1 to 4 blocks, with
// bias, residual and clamp. Each element within 2e-6 · (Σ|x·w| + |bias| +
// |residual|) of the float64 result: float32 sums of up to a few thousand
// products. The AVX2 and AVX-512 kernels must agree bit for bit (the same
// FMA chains).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/portable/util/conv_nchw16c.h"
#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kB = kNchw16cBlock;

struct Case {
  int64_t cin, cout, ih, iw, k, s, p;
  bool residual, clamp;
  bool plain = false;  // the input NCHW, not blocked
};

// [C, H, W] → [⌈C/16⌉, H, W, 16], zero past C.
std::vector<float> block(const std::vector<float>& x, int64_t c, int64_t h, int64_t w) {
  const int64_t cb = (c + kB - 1) / kB;
  std::vector<float> out(static_cast<size_t>(cb * h * w * kB), 0.0f);
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < h * w; ++i) {
      out[static_cast<size_t>(((ch / kB) * h * w + i) * kB + ch % kB)] =
          x[static_cast<size_t>(ch * h * w + i)];
    }
  }
  return out;
}

std::vector<Nchw16cKernel> host_kernels() {
  std::vector<Nchw16cKernel> k{Nchw16cKernel::kPortable};
  if (cpu_isa() >= Isa::kAvx2) k.push_back(Nchw16cKernel::kAvx2);
  if (cpu_isa() >= Isa::kAvx512) k.push_back(Nchw16cKernel::kAvx512);
  return k;
}

TEST(ConvNchw16cTest, MatchesFloat64OnEveryKernel) {
  const Case cases[] = {
      {64, 256, 8, 7, 1, 1, 0, true, true},    // pointwise, 56 positions: one row + tail
      {32, 48, 9, 10, 1, 1, 0, false, true},   // three blocks: one group
      {48, 80, 5, 5, 1, 2, 0, true, false},    // stride-2 1×1, five blocks: 4 + 1
      {16, 16, 14, 14, 3, 1, 1, true, true},   // 3×3, one block
      {40, 70, 11, 13, 3, 1, 1, true, true},   // padded channels in and out
      {32, 64, 15, 15, 3, 2, 1, false, true},  // stride-2 3×3
      {3, 20, 17, 17, 7, 2, 3, false, true},   // a stem: 3 channels, 7×7 stride 2
      {16, 32, 6, 6, 3, 3, 0, true, false},    // stride 3: the portable loops only
      {16, 16, 1, 1, 1, 1, 0, false, false},   // one position
      {3, 64, 23, 23, 7, 2, 3, false, true, true},  // a plain stem, 7×7 stride 2
      {5, 20, 9, 8, 3, 1, 1, true, false, true},    // plain, stride 1, padded output lanes
      {16, 32, 4, 4, 1, 1, 0, false, false, true},  // plain 1×1 (not cut into long rows)
      {2, 16, 1, 1, 1, 1, 0, false, false, true},   // plain, one position (plane of 1)
      // Weights past 1 MiB, and of 256 KiB on a small input: the sums split
      // in depth chunks (nchw16c_splits_depth), partial sums in the output;
      // a last group of one block (a whole tap per chunk), a pointwise
      // plane's last row short, stride 2, padded input and output channels.
      {256, 272, 7, 9, 3, 1, 1, true, true},
      {1024, 288, 7, 8, 1, 1, 0, true, false},
      {128, 512, 6, 6, 1, 1, 0, true, true},
      {256, 256, 9, 9, 3, 2, 1, true, true},
      {200, 300, 5, 6, 3, 1, 1, false, true},
  };
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.cin << "→" << c.cout << " " << c.ih << "x" << c.iw
                                      << " k" << c.k << " s" << c.s << " p" << c.p);
    Nchw16cConv g;
    g.cin = c.cin;
    g.cout = c.cout;
    g.plain_input = c.plain;
    g.kh = g.kw = c.k;
    g.stride_h = g.stride_w = c.s;
    g.pad_h = g.pad_w = c.p;
    g.in_h = c.ih;
    g.in_w = c.iw;
    g.out_h = (c.ih + 2 * c.p - c.k) / c.s + 1;
    g.out_w = (c.iw + 2 * c.p - c.k) / c.s + 1;
    const int64_t oh = g.out_h, ow = g.out_w, cob = g.cout_blocks();
    std::vector<float> x(static_cast<size_t>(c.cin * c.ih * c.iw));
    std::vector<float> w(static_cast<size_t>(c.cout * c.cin * c.k * c.k));
    std::vector<float> bias(static_cast<size_t>(cob * kB), 0.0f);
    std::vector<float> res(static_cast<size_t>(c.cout * oh * ow));
    for (auto& v : x) v = nd(rng);
    for (auto& v : w) v = nd(rng);
    for (int64_t i = 0; i < c.cout; ++i) bias[static_cast<size_t>(i)] = nd(rng);
    for (auto& v : res) v = nd(rng);
    const std::vector<float> xb = c.plain ? x : block(x, c.cin, c.ih, c.iw);
    const std::vector<float> rb = block(res, c.cout, oh, ow);
    std::vector<float> packed(static_cast<size_t>(nchw16c_packed_weight_floats(g)));
    nchw16c_pack_weight(g, w.data(), packed.data());
    std::vector<float> padded(static_cast<size_t>(nchw16c_scratch_floats(g)));
    const float* in = xb.data();
    if (g.padded()) {
      nchw16c_pad_input(g, xb.data(), padded.data());
      in = padded.data();
    }
    Nchw16cEpilogue ep;
    ep.bias = bias.data();
    ep.residual = c.residual ? rb.data() : nullptr;
    ep.clamp = c.clamp;
    ep.lo = c.clamp ? -0.5f : ep.lo;
    ep.hi = c.clamp ? 2.0f : ep.hi;

    std::vector<float> first;
    for (Nchw16cKernel kernel : host_kernels()) {
      if (kernel != Nchw16cKernel::kPortable && c.s > 2) continue;
      SCOPED_TRACE(static_cast<int>(kernel));
      std::vector<float> out(static_cast<size_t>(cob * oh * ow * kB), NAN);
      // Two calls over halves of the units: any split gives the same result.
      const int64_t units = nchw16c_units(g);
      nchw16c_conv_units(g, kernel, in, packed.data(), ep, out.data(), 0, units / 2);
      nchw16c_conv_units(g, kernel, in, packed.data(), ep, out.data(), units / 2, units);
      for (int64_t co = 0; co < cob * kB; ++co) {
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t xx = 0; xx < ow; ++xx) {
            const float got = out[static_cast<size_t>(((co / kB) * oh * ow + y * ow + xx) * kB +
                                                      co % kB)];
            if (co >= c.cout) {
              ASSERT_EQ(got, 0.0f) << "padded channel " << co;
              continue;
            }
            double sum = 0, mag = 0;
            for (int64_t ci = 0; ci < c.cin; ++ci) {
              for (int64_t ky = 0; ky < c.k; ++ky) {
                for (int64_t kx = 0; kx < c.k; ++kx) {
                  const int64_t iy = y * c.s + ky - c.p, ix = xx * c.s + kx - c.p;
                  if (iy < 0 || iy >= c.ih || ix < 0 || ix >= c.iw) continue;
                  const double t = static_cast<double>(x[static_cast<size_t>((ci * c.ih + iy) * c.iw + ix)]) *
                                   w[static_cast<size_t>(((co * c.cin + ci) * c.k + ky) * c.k + kx)];
                  sum += t;
                  mag += std::fabs(t);
                }
              }
            }
            sum += bias[static_cast<size_t>(co)];
            mag += std::fabs(bias[static_cast<size_t>(co)]);
            if (c.residual) {
              const double r = res[static_cast<size_t>((co * oh + y) * ow + xx)];
              sum += r;
              mag += std::fabs(r);
            }
            if (c.clamp) sum = std::fmin(std::fmax(sum, -0.5), 2.0);
            ASSERT_NEAR(got, sum, 2e-6 * (mag + 1.0)) << "channel " << co << " at " << y << ","
                                                      << xx;
          }
        }
      }
      if (kernel == Nchw16cKernel::kAvx2) first = out;
      if (kernel == Nchw16cKernel::kAvx512) {
        EXPECT_EQ(first, out) << "AVX-512 and AVX2 differ";
      }
    }
  }
}

// The cases above that split their sums, and one that does not (the rule is
// the split's, not the test's).
TEST(ConvNchw16cTest, DepthSplitFollowsWeightAndInputSize) {
  auto conv = [](int64_t cin, int64_t cout, int64_t hw, int64_t k) {
    Nchw16cConv g;
    g.cin = cin;
    g.cout = cout;
    g.kh = g.kw = k;
    g.pad_h = g.pad_w = k / 2;
    g.in_h = g.in_w = g.out_h = g.out_w = hw;
    return g;
  };
  EXPECT_TRUE(nchw16c_splits_depth(conv(512, 512, 7, 3)));     // 9 MiB weight
  EXPECT_TRUE(nchw16c_splits_depth(conv(256, 1024, 14, 1)));   // 1 MiB, 196 KiB input
  EXPECT_FALSE(nchw16c_splits_depth(conv(64, 64, 56, 3)));     // 144 KiB weight
  EXPECT_FALSE(nchw16c_splits_depth(conv(128, 512, 56, 1)));   // 1.5 MiB input
  Nchw16cConv stem = conv(3, 64, 224, 7);
  stem.plain_input = true;
  EXPECT_FALSE(nchw16c_splits_depth(stem));
}

// An output that is also the residual (an in-place add) is not split (the
// partial sums would overwrite the residual before it is added): it gives
// the bits of the split call with the residual elsewhere.
TEST(ConvNchw16cTest, ResidualInTheOutputIsNotOverwritten) {
  Nchw16cConv g;
  g.cin = 512;
  g.cout = 512;
  g.kh = g.kw = 3;
  g.pad_h = g.pad_w = 1;
  g.in_h = g.in_w = g.out_h = g.out_w = 7;
  ASSERT_TRUE(nchw16c_splits_depth(g));
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  const int64_t plane = g.out_h * g.out_w * kB;
  std::vector<float> x(static_cast<size_t>(g.cin_blocks() * g.in_h * g.in_w * kB));
  std::vector<float> w(static_cast<size_t>(g.cout * g.cin * 9));
  std::vector<float> bias(static_cast<size_t>(g.cout_blocks() * kB));
  std::vector<float> res(static_cast<size_t>(g.cout_blocks() * plane));
  for (auto* v : {&x, &w, &bias, &res}) {
    for (auto& e : *v) e = nd(rng);
  }
  std::vector<float> packed(static_cast<size_t>(nchw16c_packed_weight_floats(g)));
  nchw16c_pack_weight(g, w.data(), packed.data());
  std::vector<float> padded(static_cast<size_t>(nchw16c_scratch_floats(g)));
  nchw16c_pad_input(g, x.data(), padded.data());
  for (Nchw16cKernel kernel : host_kernels()) {
    SCOPED_TRACE(static_cast<int>(kernel));
    Nchw16cEpilogue ep;
    ep.bias = bias.data();
    ep.residual = res.data();
    std::vector<float> apart(res.size(), NAN);
    nchw16c_conv_units(g, kernel, padded.data(), packed.data(), ep, apart.data(), 0,
                       nchw16c_units(g));
    std::vector<float> in_place = res;
    ep.residual = in_place.data();
    nchw16c_conv_units(g, kernel, padded.data(), packed.data(), ep, in_place.data(), 0,
                       nchw16c_units(g));
    EXPECT_EQ(apart, in_place);
  }
}

TEST(ConvNchw16cTest, ShortRowTailsShareTheLastFullTile) {
  auto split = [](int64_t n, int64_t tile) {
    const Nchw16cRowSplit s = nchw16c_split_row(n, tile);
    EXPECT_EQ(s.full * tile + s.first + s.second, n);
    return std::vector<int64_t>{s.full, s.first, s.second};
  };
  EXPECT_EQ(split(7, 6), (std::vector<int64_t>{0, 4, 3}));    // not 6 + 1
  EXPECT_EQ(split(14, 6), (std::vector<int64_t>{1, 4, 4}));
  EXPECT_EQ(split(12, 6), (std::vector<int64_t>{2, 0, 0}));
  EXPECT_EQ(split(5, 6), (std::vector<int64_t>{0, 5, 0}));
  EXPECT_EQ(split(56, 7), (std::vector<int64_t>{8, 0, 0}));
  EXPECT_EQ(split(13, 7), (std::vector<int64_t>{0, 7, 6}));
  EXPECT_EQ(split(0, 7), (std::vector<int64_t>{0, 0, 0}));
}

TEST(ConvNchw16cTest, NanStaysNanThroughTheClamp) {
  Nchw16cConv g;
  g.cin = 16;
  g.cout = 16;
  g.in_h = 1;
  g.in_w = 7;
  g.out_h = 1;
  g.out_w = 7;
  std::vector<float> x(7 * 16, 1.0f), w(16 * 16, 0.5f), bias(16, 0.0f);
  x[3 * 16 + 2] = NAN;
  std::vector<float> packed(static_cast<size_t>(nchw16c_packed_weight_floats(g)));
  nchw16c_pack_weight(g, w.data(), packed.data());
  Nchw16cEpilogue ep;
  ep.bias = bias.data();
  ep.clamp = true;
  ep.lo = 0.0f;
  for (Nchw16cKernel kernel : host_kernels()) {
    std::vector<float> out(7 * 16);
    nchw16c_conv_units(g, kernel, x.data(), packed.data(), ep, out.data(), 0, nchw16c_units(g));
    EXPECT_TRUE(std::isnan(out[3 * 16])) << static_cast<int>(kernel);
    EXPECT_EQ(out[0], 8.0f) << static_cast<int>(kernel);
  }
}

}  // namespace
}  // namespace ember::kernels::portable
