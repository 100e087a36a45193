// qs8_gemm_6x16_avx2: the int8 GEMM microkernel for AVX2 CPUs without VNNI.
// Both operands arrive widened to int16 in pairs of k (qgemm.h), and
// VPMADDWD multiplies a broadcast weight pair by 8 activation pairs and adds
// each pair into one int32 lane: exact, unlike VPMADDUBSW on bytes, whose
// int16 pair sums saturate (255 · 127 · 2 > 32767). Twelve ymm accumulators
// hold the 6×16 tile; two hold the activation pairs, one the broadcast.
#include "kernels/quantized/util/qgemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EMBER_QGEMM_AVX2 1
#else
#define EMBER_QGEMM_AVX2 0
#endif

namespace ember::kernels::quantized::qgemm_detail {

#if EMBER_QGEMM_AVX2

// Group g's activations are at b + g·32, or with kAt at b + boff[g] (the
// implicit convolution, qconv_implicit.h).
template <bool kAt>
__attribute__((target("avx2"), always_inline)) inline void tile_6x16(int64_t kg, const int16_t* a,
                                                                     const int16_t* b,
                                                                     const int64_t* boff,
                                                                     int32_t* acc) {
  __m256i c[6][2];
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) c[i][0] = c[i][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < kg; ++g) {
    const int16_t* bg = kAt ? b + boff[g] : b;
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bg + 16));
#pragma GCC unroll 6
    for (int i = 0; i < 6; ++i) {
      int32_t pair;
      __builtin_memcpy(&pair, a + i * 2, sizeof(pair));
      const __m256i ai = _mm256_set1_epi32(pair);
      c[i][0] = _mm256_add_epi32(c[i][0], _mm256_madd_epi16(ai, b0));
      c[i][1] = _mm256_add_epi32(c[i][1], _mm256_madd_epi16(ai, b1));
    }
    a += 12;
    if (!kAt) b += 32;
  }
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + i * 16), c[i][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + i * 16 + 8), c[i][1]);
  }
}

__attribute__((target("avx2"))) void qs8_gemm_6x16_avx2(int64_t kg, const int16_t* a,
                                                       const int16_t* b, int32_t* acc) {
  tile_6x16<false>(kg, a, b, nullptr, acc);
}

__attribute__((target("avx2"))) void qs8_gemm_6x16_avx2_at(int64_t kg, const int16_t* a,
                                                          const int16_t* b, const int64_t* boff,
                                                          int32_t* acc) {
  tile_6x16<true>(kg, a, b, boff, acc);
}

#else

void qs8_gemm_6x16_avx2(int64_t kg, const int16_t* a, const int16_t* b, int32_t* acc) {
  qs8_gemm_6x16_baseline(kg, a, b, acc);
}

void qs8_gemm_6x16_avx2_at(int64_t kg, const int16_t* a, const int16_t* b, const int64_t* boff,
                           int32_t* acc) {
  qs8_gemm_6x16_baseline_at(kg, a, b, boff, acc);
}

#endif

}  // namespace ember::kernels::quantized::qgemm_detail
