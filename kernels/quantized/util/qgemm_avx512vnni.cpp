// qs8_gemm_8x32_avx512vnni: the int8 GEMM microkernel for CPUs with
// AVX-512 VNNI. VPDPBUSD multiplies 4 unsigned activation bytes by 4 signed
// weight bytes and adds the four products into one int32 lane, so one
// instruction does 64 multiply-adds. Activations arrive as x + 128 (uint8)
// and the epilogue subtracts Σ_k w · (128 + zx) per row (qgemm.h). Sixteen
// zmm accumulators hold the 8×32 tile; two hold the activation groups, one
// the broadcast weight group.
#include "kernels/quantized/util/qgemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EMBER_QGEMM_VNNI 1
#else
#define EMBER_QGEMM_VNNI 0
#endif

namespace ember::kernels::quantized::qgemm_detail {

#if EMBER_QGEMM_VNNI

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void qs8_gemm_8x32_avx512vnni(
    int64_t kg, const int8_t* a, const uint8_t* b, int32_t* acc) {
  __m512i c[8][2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) c[i][0] = c[i][1] = _mm512_setzero_si512();
  for (int64_t g = 0; g < kg; ++g) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 64);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      int32_t quad;
      __builtin_memcpy(&quad, a + i * 4, sizeof(quad));
      const __m512i ai = _mm512_set1_epi32(quad);
      c[i][0] = _mm512_dpbusd_epi32(c[i][0], b0, ai);
      c[i][1] = _mm512_dpbusd_epi32(c[i][1], b1, ai);
    }
    a += 32;
    b += 128;
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    _mm512_storeu_si512(acc + i * 32, c[i][0]);
    _mm512_storeu_si512(acc + i * 32 + 16, c[i][1]);
  }
}

#else

void qs8_gemm_8x32_avx512vnni(int64_t, const int8_t*, const uint8_t*, int32_t*) {}

#endif

}  // namespace ember::kernels::quantized::qgemm_detail
