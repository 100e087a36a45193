// bf16_gemm_4x16_avx2_fma: the bf16 GEMM microkernel for AVX2 hosts without
// AVX512-BF16 (gemm_bf16.h). A bf16 value is the high half of a float32, so
// each half of a 32-bit pair widens with one shift (the even k) or one mask
// (the odd k), and two FMAs add the pair's products. The 4×16 tile keeps
// eight accumulators, four widened weight vectors, the two halves of the A
// pair and the mask in the sixteen ymm registers.
//
// Also the AVX2 loop that rounds A to bf16 pairs (the scalar's bits).
#include "kernels/portable/util/gemm_bf16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_BF16_AVX2 1
#include <immintrin.h>
#else
#define EMBER_BF16_AVX2 0
#endif

namespace ember::kernels::portable {

#if EMBER_BF16_AVX2

__attribute__((target("avx2,fma"))) void bf16_gemm_4x16_avx2_fma(int64_t kp, const uint32_t* a,
                                                                 const uint32_t* b, float* c,
                                                                 int64_t c_rs, bool accumulate) {
  __m256 acc[4][2];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    acc[i][0] = accumulate ? _mm256_loadu_ps(c + i * c_rs) : _mm256_setzero_ps();
    acc[i][1] = accumulate ? _mm256_loadu_ps(c + i * c_rs + 8) : _mm256_setzero_ps();
  }
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t q = 0; q < kp; ++q) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 8));
    const __m256 be0 = _mm256_castsi256_ps(_mm256_slli_epi32(w0, 16));
    const __m256 bo0 = _mm256_castsi256_ps(_mm256_and_si256(w0, high));
    const __m256 be1 = _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16));
    const __m256 bo1 = _mm256_castsi256_ps(_mm256_and_si256(w1, high));
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m256i aw = _mm256_set1_epi32(static_cast<int>(a[i]));
      const __m256 ae = _mm256_castsi256_ps(_mm256_slli_epi32(aw, 16));
      const __m256 ao = _mm256_castsi256_ps(_mm256_and_si256(aw, high));
      acc[i][0] = _mm256_fmadd_ps(ae, be0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ae, be1, acc[i][1]);
      acc[i][0] = _mm256_fmadd_ps(ao, bo0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ao, bo1, acc[i][1]);
    }
    a += 4;
    b += 16;
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(c + i * c_rs, acc[i][0]);
    _mm256_storeu_ps(c + i * c_rs + 8, acc[i][1]);
  }
}

namespace bf16_detail {

// x rounded to bf16 (nearest even, NaN quieted) in the high half of each lane.
__attribute__((target("avx2"))) inline __m256i round_high(__m256i x) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(r, _mm256_or_si256(x, _mm256_set1_epi32(0x00400000)), nan);
}

__attribute__((target("avx2"))) int64_t round_pairs_avx2(const float* src, int64_t count,
                                                         uint32_t* words) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const __m256i low_words = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  int64_t e = 0;
  for (; e + 8 <= count; e += 8) {
    const __m256i r = round_high(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + e)));
    const __m256i t =
        _mm256_blend_epi32(_mm256_srli_epi32(r, 16), _mm256_and_si256(r, high), 0xaa);
    const __m256i folded = _mm256_or_si256(t, _mm256_srli_epi64(t, 32));
    const __m256i packed = _mm256_permutevar8x32_epi32(folded, low_words);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(words + e / 2), _mm256_castsi256_si128(packed));
  }
  return e;
}

__attribute__((target("avx2"))) int64_t round_row_pairs_avx2(const float* r0, const float* r1,
                                                             int64_t n, uint32_t* words) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i lo = _mm256_srli_epi32(
        round_high(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + j))), 16);
    const __m256i hi =
        r1 != nullptr
            ? _mm256_and_si256(
                  round_high(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1 + j))), high)
            : _mm256_setzero_si256();
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + j), _mm256_or_si256(lo, hi));
  }
  return j;
}

}  // namespace bf16_detail

#else

void bf16_gemm_4x16_avx2_fma(int64_t, const uint32_t*, const uint32_t*, float*, int64_t, bool) {}

namespace bf16_detail {
int64_t round_pairs_avx2(const float*, int64_t, uint32_t*) { return 0; }
int64_t round_row_pairs_avx2(const float*, const float*, int64_t, uint32_t*) { return 0; }
}  // namespace bf16_detail

#endif

}  // namespace ember::kernels::portable
