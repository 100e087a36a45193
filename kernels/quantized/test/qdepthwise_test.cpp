// The int8 depthwise plane (qdepthwise.h) against a direct loop, over
// strides 1–3, dilation, asymmetric padding and planes narrower than a vector,
// with its scratch sized exactly (so ASan sees any read past the phase planes)
// on every ISA the host has: the sums are exact and the requantisation has no
// FMA, so every build gives the reference's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/quantized/test/qdepthwise_reference.h"
#include "kernels/quantized/util/qdepthwise.h"
#include "kernels/quantized/util/qgemm.h"

namespace ember::kernels::quantized {
namespace {

TEST(QDepthwiseTest, MatchesADirectLoop) {
  const DepthwiseCase cases[] = {
      {9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  {12, 10, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
      {7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},   {13, 17, 5, 3, 3, 2, 2, 1, 0, 2, 1, 2},
      {1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   {40, 3, 3, 3, 1, 1, 2, 0, 2, 0, 2, 1},
      {6, 33, 1, 7, 1, 3, 0, 3, 0, 3, 1, 1},
      // MobileNetV2's planes: 3x3 stride 1 and 2 on 112, 56, 14 and 7.
      {112, 112, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, {56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
      {14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   {7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      // An even tap count (no zero-weight partner) and a 5x5 (odd, 25 taps).
      {10, 21, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1},   {19, 23, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1},
  };
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> v8(-128, 127), w8(-128, 127);
  int in_place_cases = 0;
  for (const DepthwiseCase& c : cases) {
    for (const bool extreme : {false, true}) {
      const QDepthwiseGeometry g = geometry_of(c);
      SCOPED_TRACE(describe(c));
      std::vector<int8_t> x(static_cast<size_t>(c.ih * c.iw)), w(static_cast<size_t>(c.kh * c.kw));
      // Extreme: every product at its largest magnitude, (-128)·(-128), so
      // paired int16 products sum to 32768 in their int32 lanes.
      for (auto& v : x) v = static_cast<int8_t>(extreme ? -128 : v8(rng));
      for (auto& v : w) v = static_cast<int8_t>(extreme ? -128 : w8(rng));
      const int32_t zx = extreme ? 127 : 7, zy = -3;
      const float scale = extreme ? 1e-6f : 0.0021f, offset = 1.25f;
      const float lo = -128.0f - zy, hi = 127.0f - zy;
      std::vector<int8_t> want(static_cast<size_t>(g.oh * g.ow));
      direct_depthwise(g, x.data(), w.data(), zx, scale, offset, lo, hi, zy, want.data());
      std::vector<int32_t> packed(qdepthwise_weights_bytes(1, c.kh * c.kw) / sizeof(int32_t));
      const QDepthwiseWeights dw = qdepthwise_weights(w.data(), 1, c.kh * c.kw, zx, packed.data());
      std::vector<int64_t> offsets(static_cast<size_t>(qdepthwise_offset_count(g)));
      const QDepthwiseLayout layout = qdepthwise_layout(g, offsets.data());
      std::vector<uint8_t> scratch(qdepthwise_scratch_bytes(g));
      std::vector<int8_t> got(want.size(), 0);
      qdepthwise_plane(layout, dw, 0, x.data(), scale, offset, lo, hi, zy, got.data(),
                       scratch.data());
      EXPECT_EQ(got, want) << (extreme ? "extreme values" : "random values");
      if (qdepthwise_reads_in_place(g)) {
        // The in-place form on the same plane: no scratch, the input and
        // output exactly sized, so ASan sees a store past the output.
        std::vector<uint32_t> masks(static_cast<size_t>(qdepthwise_mask_count(g)));
        qdepthwise_in_place_masks(g, masks.data());
        const QDepthwiseLayout in_place = qdepthwise_layout(g, offsets.data(), masks.data());
        std::vector<int8_t> direct(want.size(), 0);
        qdepthwise_plane(in_place, dw, 0, x.data(), scale, offset, lo, hi, zy, direct.data(),
                         nullptr);
        EXPECT_EQ(direct, want) << "in place, " << (extreme ? "extreme values" : "random values");
        ++in_place_cases;
      }
    }
  }
  // On a VNNI host, the seven stride-1 "same" planes above (9×11, 1×1, 112,
  // 14, 7, 10×21 with a 2×2 kernel, 19×23 with a 5×5) take the in-place form.
  if (qgemm_kind() == QGemmKind::kAvx512Vnni) {
    EXPECT_GE(in_place_cases, 14);
  }
}

TEST(QDepthwiseTest, InPlaceMasksMarkTheTapsInsideTheImage) {
  // A 3×5 plane, 3×3 kernel, padding 1: 15 outputs in one chunk.
  const QDepthwiseGeometry g{3, 5, 3, 3, 3, 5, 1, 1, 1, 1, 1, 1, 1, 1};
  if (!qdepthwise_reads_in_place(g)) GTEST_SKIP() << "the host has no AVX-512 VNNI";
  ASSERT_EQ(qdepthwise_mask_count(g), 11);
  std::vector<uint32_t> m(11);
  qdepthwise_in_place_masks(g, m.data());
  // Tap (0, 0) reads up and left: outputs in rows 1–2, columns 1–4.
  EXPECT_EQ(m[0], 0b11110'11110'00000u);
  // Tap (1, 1), the centre: every output.
  EXPECT_EQ(m[4], 0b11111'11111'11111u);
  // Tap (2, 2) reads down and right: rows 0–1, columns 0–3.
  EXPECT_EQ(m[8], 0b00000'01111'01111u);
  // The zero-weight partner of the ninth tap reads nothing, and the chunk
  // has outputs on the image's border (and lanes past the last output).
  EXPECT_EQ(m[9], 0u);
  EXPECT_EQ(m[10], 0u);
  // A 5×70 plane: chunks 0–2 (outputs 0–95) touch the top row; chunk 3
  // (outputs 96–127: row 1, columns 26–57) has every tap inside; chunk 4
  // (128–159) holds column 69 of row 1 and column 0 of row 2.
  const QDepthwiseGeometry wide{5, 70, 3, 3, 5, 70, 1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<uint32_t> mw(static_cast<size_t>(qdepthwise_mask_count(wide)));
  qdepthwise_in_place_masks(wide, mw.data());
  for (int k = 0; k < 5; ++k) EXPECT_EQ(mw[k * 11 + 10], k == 3 ? 1u : 0u) << "chunk " << k;
}

}  // namespace
}  // namespace ember::kernels::quantized
