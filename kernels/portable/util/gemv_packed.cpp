#include "kernels/portable/util/gemv_packed.h"

namespace ember::kernels::portable {

namespace {

constexpr int kPortableNR = GemmTile<float>::kNR;

// The portable microkernel's chain (gemm_detail::micro_tile) for one panel.
void panel_sums_portable(int64_t m, int64_t kc, const float* a, int64_t a_rs, int64_t a_cs,
                         const float* panel, float* acc) {
  for (int64_t i = 0; i < m; ++i) {
    float s[kPortableNR] = {};
    const float* ai = a + i * a_rs;
    for (int64_t p = 0; p < kc; ++p) {
      const float x = ai[p * a_cs];
      const float* bp = panel + p * kPortableNR;
      for (int j = 0; j < kPortableNR; ++j) s[j] += x * bp[j];
    }
    for (int j = 0; j < kPortableNR; ++j) acc[i * kPortableNR + j] = s[j];
  }
}

}  // namespace

bool f32_gemv_packed_takes(const PackedPanels<float>& b) {
  return b.data != nullptr && b.tile == gemm_nr<float>() &&
         (b.tile == 32 || b.tile == 16 || b.tile == kPortableNR);
}

void f32_gemv_packed(int64_t m, int64_t j_first, int64_t j_last, int64_t k, const float* a,
                     int64_t a_rs, int64_t a_cs, const PackedPanels<float>& b, float alpha,
                     float beta, float* c, int64_t c_rs, int64_t c_cs) {
  constexpr int64_t kNC = GemmBlocking<float>::kNC;
  constexpr int64_t kKC = GemmBlocking<float>::kKCPacked;
  const int64_t tile = b.tile;
  const int64_t n = b.rows;
  if (j_last > n) j_last = n;
  // The combination below is compiled here, for baseline x86-64 (no FMA to
  // contract it into), as gemm_tile's is: the GEMM's rounding exactly.
  alignas(64) float acc[kGemvMaxM * 32];
  for (int64_t jc = j_first / kNC * kNC; jc < j_last; jc += kNC) {
    const int64_t nc = n - jc < kNC ? n - jc : kNC;
    const int64_t padded = (nc + tile - 1) / tile * tile;
    const int64_t first = j_first > jc ? j_first : jc;
    const int64_t last = j_last < jc + nc ? j_last : jc + nc;
    for (int64_t pc = 0; pc < k; pc += kKC) {
      const int64_t kc = k - pc < kKC ? k - pc : kKC;
      const float* block = b.data + jc * k + padded * pc;
      const float beta_k = pc == 0 ? beta : 1.0f;
      for (int64_t j0 = first; j0 < last; j0 += tile) {
        const float* panel = block + (j0 - jc) * kc;
        const float* ap = a + pc * a_cs;
        if (tile == 32) {
          f32_panel_sums_32_avx512f(m, kc, ap, a_rs, a_cs, panel, acc);
        } else if (tile == 16) {
          f32_panel_sums_16_avx2_fma(m, kc, ap, a_rs, a_cs, panel, acc);
        } else {
          panel_sums_portable(m, kc, ap, a_rs, a_cs, panel, acc);
        }
        const int64_t nr = last - j0 < tile ? last - j0 : tile;
        for (int64_t i = 0; i < m; ++i) {
          float* row = c + i * c_rs + j0 * c_cs;
          const float* s = acc + i * tile;
          if (beta_k == 0.0f) {
            for (int64_t j = 0; j < nr; ++j) row[j * c_cs] = alpha * s[j];
          } else {
            for (int64_t j = 0; j < nr; ++j) row[j * c_cs] = alpha * s[j] + beta_k * row[j * c_cs];
          }
        }
      }
    }
  }
}

}  // namespace ember::kernels::portable
