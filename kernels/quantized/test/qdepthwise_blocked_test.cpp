// The depthwise convolution of 16 channels at a time (qdepthwise_blocked.h)
// against a direct loop per channel: strides 1–3, dilation, asymmetric
// padding, planes of one pixel up to the grid's limit, every tap count up
// to 7×7, extreme values (the largest products) and per-channel scales and
// offsets, with exactly sized inputs, outputs and scratch, so ASan sees a
// read or write past any of them. The sums are exact and the requantisation
// has the plane path's float operations, so the bits must be the loop's.
// Runs where the blocked form does (AVX2 and AVX-512 hosts); ctest runs it
// again at EMBER_ISA=avx2 (the AVX2 form) and baseline, where it is skipped.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/quantized/test/qdepthwise_reference.h"
#include "kernels/quantized/util/qdepthwise_blocked.h"

namespace ember::kernels::quantized {
namespace {

TEST(QDepthwiseBlockedTest, MatchesADirectLoop) {
  const DepthwiseCase cases[] = {
      // MobileNetV2's stride-2 layers (TF padding: bottom and right only)
      // and its stride-1 planes.
      {14, 14, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1}, {28, 28, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
      {32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
      // Stride 1 on small planes: MobileNetV2's 7×7, and a dilated 3-wide
      // kernel (the general loop).
      {7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   {6, 6, 3, 3, 1, 1, 1, 2, 1, 2, 1, 2},
      // Odd shapes: one pixel, a plane narrower than a vector of pixels,
      // strides 3 and mixed, dilation, no padding, 5×5, 1×7 and 7×7.
      {1, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},   {13, 17, 5, 3, 3, 2, 2, 1, 0, 2, 1, 2},
      {40, 3, 3, 3, 2, 1, 2, 0, 2, 0, 2, 1},  {6, 33, 1, 7, 1, 3, 0, 3, 0, 3, 1, 1},
      {9, 11, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1},  {19, 23, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1},
      {12, 12, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1}, {3, 5, 2, 2, 2, 1, 0, 0, 1, 1, 1, 1},
  };
  constexpr int64_t kChannels = 16;
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> v8(-128, 127);
  std::uniform_real_distribution<float> sd(0.0005f, 0.004f), od(-3.0f, 3.0f);
  int ran = 0;
  for (const DepthwiseCase& c : cases) {
    for (const bool extreme : {false, true}) {
      const QDepthwiseGeometry g = geometry_of(c);
      SCOPED_TRACE(describe(c) + (extreme ? ", extreme values" : ""));
      if (!qdepthwise_blocked_applies(g, kChannels)) continue;
      const int64_t taps = c.kh * c.kw, in_px = c.ih * c.iw, out_px = g.oh * g.ow;
      // Exactly sized (unique_ptr arrays: ASan sees one byte past the end).
      auto x = std::make_unique<int8_t[]>(static_cast<size_t>(kChannels * in_px));
      std::vector<int8_t> w(static_cast<size_t>(kChannels * taps));
      for (int64_t i = 0; i < kChannels * in_px; ++i) {
        x[static_cast<size_t>(i)] = static_cast<int8_t>(extreme ? -128 : v8(rng));
      }
      for (auto& v : w) v = static_cast<int8_t>(extreme ? -128 : v8(rng));
      const int32_t zx = extreme ? 127 : 7, zy = -3;
      std::vector<float> scale(kChannels), offset(kChannels);
      for (int64_t ch = 0; ch < kChannels; ++ch) {
        scale[static_cast<size_t>(ch)] = extreme ? 1e-6f : sd(rng);
        offset[static_cast<size_t>(ch)] = od(rng);
      }
      const float lo = -128.0f - zy, hi = 127.0f - zy;
      std::vector<int8_t> want(static_cast<size_t>(kChannels * out_px));
      for (int64_t ch = 0; ch < kChannels; ++ch) {
        direct_depthwise(g, x.get() + ch * in_px, w.data() + ch * taps, zx,
                         scale[static_cast<size_t>(ch)], offset[static_cast<size_t>(ch)], lo, hi,
                         zy, want.data() + ch * out_px);
      }
      std::vector<float> packed(qdepthwise_blocked_weights_bytes(kChannels, taps) / sizeof(float));
      const float* bw = qdepthwise_blocked_weights(w.data(), kChannels, taps, packed.data());
      auto scratch = std::make_unique<uint8_t[]>(qdepthwise_blocked_scratch_bytes(g));
      auto got = std::make_unique<int8_t[]>(static_cast<size_t>(kChannels * out_px));
      qdepthwise_block16(g, bw, x.get(), zx, scale.data(), offset.data(), lo, hi, zy, got.get(),
                         scratch.get());
      int64_t wrong = 0, first = -1;
      for (int64_t i = 0; i < kChannels * out_px; ++i) {
        if (got[static_cast<size_t>(i)] != want[static_cast<size_t>(i)]) {
          if (first < 0) first = i;
          ++wrong;
        }
      }
      EXPECT_EQ(wrong, 0) << "first at channel " << first / out_px << ", output "
                          << first % out_px;
      ++ran;
    }
  }
  if (!qdepthwise_blocked_applies({14, 14, 3, 3, 7, 7, 2, 2, 0, 0, 1, 1, 1, 1}, kChannels)) {
    GTEST_SKIP() << "the blocked form needs AVX2 (EMBER_ISA or the host caps it)";
  }
  EXPECT_EQ(ran, 26);
}

TEST(QDepthwiseBlockedTest, AppliesOnlyWhereItShould) {
  const QDepthwiseGeometry small{14, 14, 3, 3, 7, 7, 2, 2, 0, 0, 1, 1, 1, 1};
  if (!qdepthwise_blocked_applies(small, 16)) GTEST_SKIP() << "no AVX2 here (or capped)";
  EXPECT_FALSE(qdepthwise_blocked_applies(small, 15));  // Not one whole block.
  const QDepthwiseGeometry large{112, 112, 3, 3, 56, 56, 2, 2, 0, 0, 1, 1, 1, 1};
  EXPECT_FALSE(qdepthwise_blocked_applies(large, 96));  // 113×113 pixels: past the grid's limit.
  const QDepthwiseGeometry wide{56, 56, 3, 3, 28, 28, 2, 2, 0, 0, 1, 1, 1, 1};
  EXPECT_FALSE(qdepthwise_blocked_applies(wide, 144));  // 784 outputs: the plane path's.
  const QDepthwiseGeometry same{14, 14, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_FALSE(qdepthwise_blocked_applies(same, 384));  // Stride 1 from 14×14: the plane path's.
  const QDepthwiseGeometry smallest{7, 7, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_TRUE(qdepthwise_blocked_applies(smallest, 960));
  const QDepthwiseGeometry deep{20, 20, 9, 9, 6, 6, 2, 2, 0, 0, 1, 1, 0, 0};
  EXPECT_FALSE(qdepthwise_blocked_applies(deep, 32));  // 81 taps: sums could pass 2^24.
}

TEST(QDepthwiseBlockedTest, TransposeSixteenBytesBySixteen) {
  int8_t rows[256], out[256];
  for (int i = 0; i < 256; ++i) rows[i] = static_cast<int8_t>(i * 7 + 3);
  qdepthwise_transpose16(rows, out);
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) ASSERT_EQ(out[16 * c + r], rows[16 * r + c]) << r << "," << c;
  }
}

}  // namespace
}  // namespace ember::kernels::quantized
