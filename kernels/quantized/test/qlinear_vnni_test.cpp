// The token-major int8 GEMM of the linear layers (qlinear_vnni.h) against a
// plain int32 reference: shapes that leave partial tiles of tokens and
// panels of channels, depths that are not a multiple of 4, int8 and float
// epilogues, 1 and 2 threads, token blocks (a deep k). The sums are exact,
// so the outputs must be the reference's bits. Skipped where the host has no
// AVX-512 VNNI (the only place the GEMM runs).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/quantized/test/qlinear_check.h"
#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/util/qlinear_vnni.h"

namespace ember::kernels::quantized {
namespace {

void check(int64_t tokens, int64_t k, int64_t n, bool with_offset, uint32_t seed,
           bool amx = false) {
  auto make = [tokens, k, n, amx](const std::vector<int8_t>& w, const std::vector<int8_t>& x,
                                  int32_t zx) -> QLinearRun {
    auto packed = std::make_shared<std::vector<uint8_t>>(qlinear_packed_bytes(n, k, amx));
    auto sums = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(n));
    const QLinearWeights lw =
        qlinear_pack_weights(w.data(), n, k, packed->data(), sums->data(), amx);
    auto rows = std::make_shared<std::vector<uint8_t>>(qlinear_rows_bytes(tokens, k, amx) + 1);
    qlinear_pack_rows(x.data(), tokens, k, rows->data(), amx);
    return [packed, sums, lw, rows, tokens, zx](KernelContext& ctx, const QEpilogue& e) {
      qlinear_run(ctx, lw, rows->data(), tokens, zx, e);
    };
  };
  check_token_major_linear(tokens, k, n, with_offset, seed, make);
}

TEST(QLinearVnniTest, MatchesTheInt32Reference) {
  if (qgemm_kind() != QGemmKind::kAvx512Vnni) GTEST_SKIP() << "no AVX-512 VNNI here";
  const int64_t shapes[][3] = {{1, 1, 1},    {1, 64, 32},   {8, 32, 32},  {13, 37, 45},
                               {9, 4, 16},   {33, 130, 7},  {70, 257, 97}, {5, 3, 200},
                               {128, 96, 64}, {2, 2051, 40}, {17, 1, 33}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    check(s[0], s[1], s[2], seed % 2 == 1, seed);
    ++seed;
  }
}

TEST(QLinearVnniTest, TokenBlocksOfADeepLayer) {
  if (qgemm_kind() != QGemmKind::kAvx512Vnni) GTEST_SKIP() << "no AVX-512 VNNI here";
  // 512 KiB rows blocks: k 20000 makes a block of 24 tokens, so 50 tokens take three.
  check(50, 20000, 40, true, 77);
}

// The AMX tiles (TDPBUSD) on the same packing, k padded to 64 and the rows
// to 32-token blocks; fewer than 16 tokens run the VNNI tiles on it.
TEST(QLinearVnniTest, AmxTilesMatchTheInt32Reference) {
  if (!qlinear_amx_available()) GTEST_SKIP() << "no AMX here (or EMBER_ISA below amx)";
  const int64_t shapes[][3] = {{16, 64, 32},  {32, 64, 32},   {17, 37, 45},  {33, 130, 7},
                               {70, 257, 97}, {128, 768, 96}, {15, 100, 40}, {1, 1, 1},
                               {64, 2051, 40}, {40, 1, 33}};
  uint32_t seed = 101;
  for (const auto& s : shapes) {
    check(s[0], s[1], s[2], seed % 2 == 1, seed, true);
    ++seed;
  }
  check(50, 20000, 40, true, 77, true);  // Token blocks of a deep layer.
}

TEST(QLinearVnniTest, AmxQuantizedRowsAreThePackedRows) {
  if (!qlinear_amx_available()) GTEST_SKIP() << "no AMX here (or EMBER_ISA below amx)";
  // quantize_rows and pack_rows agree byte for byte, padding included.
  const int64_t tokens = 3, k = 70;
  std::vector<float> xf(static_cast<size_t>(tokens * k));
  std::vector<int8_t> xq(xf.size());
  for (size_t i = 0; i < xf.size(); ++i) {
    xf[i] = static_cast<float>(static_cast<int>(i % 255) - 127);
    xq[i] = static_cast<int8_t>(static_cast<int>(i % 255) - 127);
  }
  std::vector<uint8_t> a(qlinear_rows_bytes(tokens, k, true), 7), b(a.size(), 9);
  qlinear_quantize_rows(xf.data(), tokens, k, 1.0f, 0, a.data(), true);
  qlinear_pack_rows(xq.data(), tokens, k, b.data(), true);
  ASSERT_GE(a.size(), static_cast<size_t>(32 * 128));
  for (size_t i = 0; i < static_cast<size_t>(32 * 128); ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(QLinearVnniTest, PackRowsShiftsAndPads) {
  const int8_t x[6] = {-128, -1, 0, 1, 127, 5};
  uint8_t rows[8];
  qlinear_pack_rows(x, 2, 3, rows);
  const uint8_t want[8] = {0, 127, 128, 128, 129, 255, 133, 128};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(rows[i], want[i]) << i;
}

}  // namespace
}  // namespace ember::kernels::quantized
