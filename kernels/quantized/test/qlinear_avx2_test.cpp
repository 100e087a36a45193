// The token-major int16 GEMM of the linear layers on AVX2 (qlinear_avx2.h)
// against a plain int32 reference: shapes that leave partial tiles of tokens
// and panels of channels, odd depths, int8 and float epilogues, 1 and 2
// threads, token blocks (a deep k). The sums are exact, so the outputs must
// be the reference's bits. Runs wherever the host has AVX2, whatever
// EMBER_ISA says (the op picks it only when qgemm_kind() is kAvx2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/quantized/test/qgemm_kinds.h"
#include "kernels/quantized/test/qlinear_check.h"
#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/util/qlinear_avx2.h"

namespace ember::kernels::quantized {
namespace {

void check(int64_t tokens, int64_t k, int64_t n, bool with_offset, uint32_t seed) {
  auto make = [tokens, k, n](const std::vector<int8_t>& w, const std::vector<int8_t>& x,
                             int32_t zx) -> QLinearRun {
    auto packed =
        std::make_shared<std::vector<int16_t>>(qlinear16_packed_bytes(n, k) / sizeof(int16_t));
    const QLinear16Weights lw = qlinear16_pack_weights(w.data(), n, k, packed->data());
    auto rows = std::make_shared<std::vector<int16_t>>(qlinear16_rows_bytes(tokens, k) /
                                                       sizeof(int16_t) + 1);
    qlinear16_pack_rows(x.data(), tokens, k, zx, rows->data());
    return [packed, lw, rows, tokens](KernelContext& ctx, const QEpilogue& e) {
      qlinear16_run(ctx, lw, rows->data(), tokens, e);
    };
  };
  check_token_major_linear(tokens, k, n, with_offset, seed, make);
}

bool host_has_avx2() {
  const std::vector<QGemmKind> kinds = host_kinds();
  return std::find(kinds.begin(), kinds.end(), QGemmKind::kAvx2) != kinds.end();
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
