// f32_epilogue_avx512f / f32_epilogue_avx2 (gemm_epilogue.h): a GEMM tile's
// bias, residual and clamp in one vector pass per row, while the tile is in
// L1. Compiled through target attributes (the build targets baseline x86-64)
// and called only when the CPU has the ISA. The additions are done in the
// order of GemmEpilogue::apply (row bias, column bias, residual) and the clamp
// keeps NaN (max/min return their second operand when either is NaN), so
// both give apply's bits.
#include "kernels/portable/util/gemm_epilogue.h"
#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
#endif

// GCC 12's AVX-512 min/max intrinsics start from _mm512_undefined_ps(), which
// -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ember::kernels::portable {

#if EMBER_ISA_X86

EMBER_TARGET_AVX512 void f32_epilogue_avx512f(const GemmEpilogue<float>& ep, int64_t m,
                                              int64_t n, float* c, int64_t c_rs) {
  const __m512 lo = _mm512_set1_ps(ep.lo), hi = _mm512_set1_ps(ep.hi);
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * c_rs;
    const float* res = ep.residual != nullptr ? ep.residual + i * ep.res_rs : nullptr;
    const __m512 b = _mm512_set1_ps(ep.row_bias != nullptr ? ep.row_bias[i * ep.bias_stride] : 0);
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 k = n - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j)) - 1);
      __m512 v = _mm512_maskz_loadu_ps(k, row + j);
      if (ep.row_bias != nullptr) v = _mm512_add_ps(v, b);
      if (ep.col_bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, ep.col_bias + j));
      if (res != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, res + j));
      if (ep.clamp) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
      _mm512_mask_storeu_ps(row + j, k, v);
    }
  }
}

EMBER_TARGET_AVX2_FMA void f32_epilogue_avx2(const GemmEpilogue<float>& ep, int64_t m, int64_t n,
                                         float* c, int64_t c_rs) {
  const __m256 lo = _mm256_set1_ps(ep.lo), hi = _mm256_set1_ps(ep.hi);
  const int64_t full = n & ~int64_t{7};
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * c_rs;
    const float* res = ep.residual != nullptr ? ep.residual + i * ep.res_rs : nullptr;
    const float bias = ep.row_bias != nullptr ? ep.row_bias[i * ep.bias_stride] : 0;
    const __m256 b = _mm256_set1_ps(bias);
    for (int64_t j = 0; j < full; j += 8) {
      __m256 v = _mm256_loadu_ps(row + j);
      if (ep.row_bias != nullptr) v = _mm256_add_ps(v, b);
      if (ep.col_bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(ep.col_bias + j));
      if (res != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(res + j));
      if (ep.clamp) v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
      _mm256_storeu_ps(row + j, v);
    }
    if (full < n) {
      GemmEpilogue<float> tail = ep.at(i, full);
      tail.apply(1, n - full, row + full, 0, 1);
    }
  }
}

#else

void f32_epilogue_avx512f(const GemmEpilogue<float>& ep, int64_t m, int64_t n, float* c,
                          int64_t c_rs) {
  ep.apply(m, n, c, c_rs, 1);
}
void f32_epilogue_avx2(const GemmEpilogue<float>& ep, int64_t m, int64_t n, float* c,
                       int64_t c_rs) {
  ep.apply(m, n, c, c_rs, 1);
}

#endif

}  // namespace ember::kernels::portable
