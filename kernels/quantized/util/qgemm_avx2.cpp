// qs8_gemm_6x16_avx2: the int8 GEMM microkernel for AVX2 CPUs without VNNI.
// Both operands arrive widened to int16 in pairs of k (qgemm.h), and
// VPMADDWD multiplies a broadcast weight pair by 8 activation pairs and adds
// each pair into one int32 lane: exact, unlike VPMADDUBSW on bytes, whose
// int16 pair sums saturate (255 · 127 · 2 > 32767). Twelve ymm accumulators
// hold the 6×16 tile; two hold the activation pairs, one the broadcast.
#include "kernels/quantized/util/qgemm.h"

#include <cstring>

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

// One tile's int8 epilogue in vectors, the same float operations as
// store_tile's (a product, then a sum; this target has no FMA to contract
// them into), and CVTPS2DQ's round half to even once the value is clamped,
// as requantize() does with its magic number. Per row: 16 sums → 16 bytes.
__attribute__((target("avx2"))) void requant_store_avx2(const int32_t* acc, const QTileStore& t,
                                                        int rows, int cols) {
  const __m256 lo = _mm256_set1_ps(t.lo), hi = _mm256_set1_ps(t.hi);
  const __m256i zp = _mm256_set1_epi32(t.zp);
  for (int i = 0; i < rows; ++i) {
    const __m256i corr = _mm256_set1_epi32(t.zshift * t.row_sums[i]);
    const __m256 s = _mm256_set1_ps(t.scale[i] * t.scale_mul);
    const __m256 o = _mm256_set1_ps(t.offset != nullptr ? t.offset[i] : 0.0f);
    __m256i q[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc + i * 16 + 8 * h));
      __m256 v = _mm256_cvtepi32_ps(_mm256_add_epi32(a, corr));
      v = _mm256_add_ps(_mm256_mul_ps(v, s), o);
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      q[h] = _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
    }
    // Values in [−128, 127] already: the saturating packs only narrow.
    // PACKSSDW works per 128-bit lane (columns 0–3, 8–11 | 4–7, 12–15);
    // the permute puts them in order.
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xD8);
    const __m128i bytes =
        _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    int8_t* dst = t.c + i * t.c_rs;
    if (cols >= 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), bytes);
    } else {
      alignas(16) int8_t row[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(row), bytes);
      for (int j = 0; j < cols; ++j) dst[j] = row[j];
    }
  }
}

__attribute__((target("avx2"))) void qs8_gemm_6x16_avx2_requant(int64_t kg, const int16_t* a,
                                                               const int16_t* b,
                                                               const QTileStore& t, int rows,
                                                               int cols) {
  alignas(32) int32_t acc[6 * 16];
  tile_6x16<false>(kg, a, b, nullptr, acc);
  requant_store_avx2(acc, t, rows, cols);
}

__attribute__((target("avx2"))) void qs8_gemm_6x16_avx2_at_requant(int64_t kg, const int16_t* a,
                                                                  const int16_t* b,
                                                                  const int64_t* boff,
                                                                  const QTileStore& t, int rows,
                                                                  int cols) {
  alignas(32) int32_t acc[6 * 16];
  tile_6x16<true>(kg, a, b, boff, acc);
  requant_store_avx2(acc, t, rows, cols);
}

// Per k group: 2 channel rows of 16 bytes → 16 pairs of int16 (x − zx).
// The 256-bit unpacks work within 128-bit lanes (columns 0–3, 8–11 and
// 4–7, 12–15); the lane permutes put them in order.
__attribute__((target("avx2"))) void pack_planes2_x16_avx2(const int8_t* x, int64_t plane,
                                                            int64_t groups, int cols, int32_t zx,
                                                            int16_t* dst) {
  const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(zx));
  alignas(16) int8_t rows[2][16];
  if (cols < 16) std::memset(rows, static_cast<uint8_t>(zx), sizeof(rows));
  for (int64_t g = 0; g < groups; ++g) {
    const int8_t* r0 = x + 2 * g * plane;
    const int8_t* r1 = r0 + plane;
    if (cols < 16) {
      // A strip's last columns through a buffer (the others' outputs are dropped).
      std::memcpy(rows[0], r0, static_cast<size_t>(cols));
      std::memcpy(rows[1], r1, static_cast<size_t>(cols));
      r0 = rows[0];
      r1 = rows[1];
    }
    const __m256i a = _mm256_sub_epi16(
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0))), z);
    const __m256i b = _mm256_sub_epi16(
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1))), z);
    const __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);
    auto* out = reinterpret_cast<__m256i*>(dst + 32 * g);
    _mm256_storeu_si256(out, _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(lo, hi, 0x31));
  }
}

#else

void pack_planes2_x16_avx2(const int8_t*, int64_t, int64_t, int, int32_t, int16_t*) {}

void qs8_gemm_6x16_avx2_requant(int64_t, const int16_t*, const int16_t*, const QTileStore&, int,
                                int) {}
void qs8_gemm_6x16_avx2_at_requant(int64_t, const int16_t*, const int16_t*, const int64_t*,
                                   const QTileStore&, int, int) {}

void qs8_gemm_6x16_avx2(int64_t kg, const int16_t* a, const int16_t* b, int32_t* acc) {
  qs8_gemm_6x16_baseline(kg, a, b, acc);
}

void qs8_gemm_6x16_avx2_at(int64_t kg, const int16_t* a, const int16_t* b, const int64_t* boff,
                           int32_t* acc) {
  qs8_gemm_6x16_baseline_at(kg, a, b, boff, acc);
}

#endif

}  // namespace ember::kernels::quantized::qgemm_detail
