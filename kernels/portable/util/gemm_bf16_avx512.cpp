// bf16_gemm_8x32_avx512bf16: the bf16 GEMM microkernel for CPUs with
// AVX512-BF16 (gemm_bf16.h), compiled through a target attribute and called
// only when bf16_gemm_kind() says so. VDPBF16PS multiplies the two bf16
// halves of each 32-bit lane pairwise and adds both products to a float32
// accumulator: sixteen zmm accumulators hold the 8×32 tile, two the weight
// strip's pairs and one the broadcast A pair.
//
// Also the AVX-512 loop that rounds A to bf16 pairs (integer operations, so
// it gives the scalar BFloat16::from_float's bits, NaN included).
#include "kernels/portable/util/gemm_bf16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_BF16_AVX512 1
#include <immintrin.h>
#else
#define EMBER_BF16_AVX512 0
#endif

// GCC 12's AVX-512 shift intrinsics start from _mm512_undefined_epi32(), which
// -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ember::kernels::portable {

#if EMBER_BF16_AVX512

__attribute__((target("avx512f,avx512bw,avx512bf16"))) void bf16_gemm_8x32_avx512bf16(
    int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t c_rs, bool accumulate) {
  __m512 acc[8][2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    acc[i][0] = accumulate ? _mm512_loadu_ps(c + i * c_rs) : _mm512_setzero_ps();
    acc[i][1] = accumulate ? _mm512_loadu_ps(c + i * c_rs + 16) : _mm512_setzero_ps();
  }
  for (int64_t q = 0; q < kp; ++q) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + 16));
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const __m512bh ai =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[i])));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
    a += 8;
    b += 32;
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    _mm512_storeu_ps(c + i * c_rs, acc[i][0]);
    _mm512_storeu_ps(c + i * c_rs + 16, acc[i][1]);
  }
}

namespace bf16_detail {

// x rounded to bf16 (nearest even, NaN quieted) in the high half of each lane.
__attribute__((target("avx512f,avx512bw"))) inline __m512i round_high(__m512i x) {
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(
      _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(x, _mm512_set1_epi32(0x00400000)));
}

__attribute__((target("avx512f,avx512bw"))) int64_t round_pairs_avx512(const float* src,
                                                                       int64_t count,
                                                                       uint32_t* words) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  int64_t e = 0;
  for (; e + 16 <= count; e += 16) {
    const __m512i r = round_high(_mm512_loadu_si512(src + e));
    // Even lanes' bf16 into the low half, odd lanes' into the high half of
    // each 64-bit lane, then fold the halves and keep the low 32 bits.
    const __m512i t = _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi32(r, 16),
                                              _mm512_and_si512(r, high));
    const __m512i folded = _mm512_or_si512(t, _mm512_srli_epi64(t, 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + e / 2),
                        _mm512_cvtepi64_epi32(folded));
  }
  return e;
}

__attribute__((target("avx512f,avx512bw"))) int64_t round_row_pairs_avx512(const float* r0,
                                                                           const float* r1,
                                                                           int64_t n,
                                                                           uint32_t* words) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512i lo = _mm512_srli_epi32(round_high(_mm512_loadu_si512(r0 + j)), 16);
    const __m512i hi = r1 != nullptr
                           ? _mm512_and_si512(round_high(_mm512_loadu_si512(r1 + j)), high)
                           : _mm512_setzero_si512();
    _mm512_storeu_si512(words + j, _mm512_or_si512(lo, hi));
  }
  return j;
}

}  // namespace bf16_detail

#else

void bf16_gemm_8x32_avx512bf16(int64_t, const uint32_t*, const uint32_t*, float*, int64_t, bool) {}

namespace bf16_detail {
int64_t round_pairs_avx512(const float*, int64_t, uint32_t*) { return 0; }
int64_t round_row_pairs_avx512(const float*, const float*, int64_t, uint32_t*) { return 0; }
}  // namespace bf16_detail

#endif

}  // namespace ember::kernels::portable
