#include "kernels/portable/util/max_pool_row_s2.h"

#include <limits>

#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
#endif

// GCC 12's mask-load and narrowing intrinsics read an undefined vector (false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace ember::kernels::portable {
namespace {

// Outputs [j0, len) one by one, in the window order of the header.
template <typename T>
inline void row_tail(const T* const* rows, int nrows, int64_t kw, int64_t j0, int64_t len, T* y) {
  for (int64_t j = j0; j < len; ++j) {
    T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    for (int r = 0; r < nrows; ++r) {
      const T* s = rows[r] + 2 * j;
      for (int64_t k = 0; k < kw; ++k) {
        const T v = s[k];
        if (v > best || v != v) best = v;
      }
    }
    y[j] = best;
  }
}

}  // namespace

#if EMBER_ISA_X86

EMBER_TARGET_AVX512 void max_pool_row_s2_f32_avx512(const float* const* rows, int nrows,
                                                    int64_t kw, int64_t len, float* y) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t j = 0; j < len; j += 16) {
    const int n = len - j < 16 ? static_cast<int>(len - j) : 16;
    // A tap reads elements [0, 2·(n − 1)] of its 32.
    const __mmask16 lo = n >= 8 ? __mmask16(0xFFFF) : __mmask16((1u << (2 * n - 1)) - 1);
    const __mmask16 hi = n >= 9 ? __mmask16((1u << (2 * n - 17)) - 1) : __mmask16(0);
    __m512 best = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512 last_nan = _mm512_setzero_ps();
    for (int r = 0; r < nrows; ++r) {
      const float* s = rows[r] + 2 * j;
      for (int64_t k = 0; k < kw; ++k) {
        const __m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, s + k), even,
                                                _mm512_maskz_loadu_ps(hi, s + k + 16));
        best = _mm512_max_ps(v, best);  // v if v > best, else best (also when v is NaN)
        last_nan = _mm512_mask_mov_ps(last_nan, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
      }
    }
    best = _mm512_mask_mov_ps(best, _mm512_cmp_ps_mask(last_nan, last_nan, _CMP_UNORD_Q), last_nan);
    _mm512_mask_storeu_ps(y + j, __mmask16((1u << n) - 1), best);
  }
}

EMBER_TARGET_AVX2_FMA void max_pool_row_s2_f32_avx2(const float* const* rows, int nrows,
                                                    int64_t kw, int64_t len, float* y) {
  if (len < 8) return row_tail(rows, nrows, kw, 0, len, y);
  const __m256i first7 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, -1, 0);
  // The last block starts at len − 8 and recomputes what the one before it wrote.
  for (int64_t j = 0;; j = j + 16 <= len ? j + 8 : len - 8) {
    __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256 last_nan = _mm256_setzero_ps();
    for (int r = 0; r < nrows; ++r) {
      const float* s = rows[r] + 2 * j;
      for (int64_t k = 0; k < kw; ++k) {
        // Elements 0..14: the 16th may lie past the row.
        const __m256 a = _mm256_loadu_ps(s + k), b = _mm256_maskload_ps(s + k + 8, first7);
        const __m256 v = _mm256_castpd_ps(
            _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
        best = _mm256_max_ps(v, best);
        last_nan = _mm256_blendv_ps(last_nan, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      }
    }
    best = _mm256_blendv_ps(best, last_nan, _mm256_cmp_ps(last_nan, last_nan, _CMP_UNORD_Q));
    _mm256_storeu_ps(y + j, best);
    if (j == len - 8) break;
  }
}

EMBER_TARGET_AVX512 void max_pool_row_s2_i8_avx512(const int8_t* const* rows, int nrows,
                                                   int64_t kw, int64_t len, int8_t* y) {
  for (int64_t j = 0; j < len; j += 32) {
    const int n = len - j < 32 ? static_cast<int>(len - j) : 32;
    // Tap k reads the words from byte 2·j + (k rounded down to even): the low
    // bytes for even k (bytes [0, 2n − 1)), the high bytes for odd k ([0, 2n)).
    const __mmask64 all = n == 32 ? ~__mmask64(0) : (__mmask64(1) << (2 * n)) - 1;
    const __mmask64 low = all >> 1;
    __m512i best = _mm512_set1_epi16(-128);
    for (int64_t k = 0; k < kw; ++k) {
      const int64_t off = 2 * j + (k & ~int64_t{1});
      const __mmask64 m = (k & 1) != 0 ? all : low;
      __m512i v = _mm512_maskz_loadu_epi8(m, rows[0] + off);
      for (int r = 1; r < nrows; ++r) v = _mm512_max_epi8(v, _mm512_maskz_loadu_epi8(m, rows[r] + off));
      v = (k & 1) != 0 ? _mm512_srai_epi16(v, 8) : _mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8);
      best = _mm512_max_epi16(best, v);
    }
    _mm256_mask_storeu_epi8(y + j, n == 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1,
                            _mm512_cvtepi16_epi8(best));
  }
}

EMBER_TARGET_AVX2_FMA void max_pool_row_s2_i8_avx2(const int8_t* const* rows, int nrows,
                                                   int64_t kw, int64_t len, int8_t* y) {
  // 16 outputs read 32 bytes from 2·j + (k rounded down to even); the last
  // of them may lie one past the row for even k unless 17 outputs remain. The
  // last block starts at len − 17 and recomputes what the one before it wrote.
  if (len < 17) return row_tail(rows, nrows, kw, 0, len, y);
  for (int64_t j = 0;; j = j + 33 <= len ? j + 16 : len - 17) {
    __m256i best = _mm256_set1_epi16(-128);
    for (int64_t k = 0; k < kw; ++k) {
      const int64_t off = 2 * j + (k & ~int64_t{1});
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[0] + off));
      for (int r = 1; r < nrows; ++r) {
        v = _mm256_max_epi8(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + off)));
      }
      v = (k & 1) != 0 ? _mm256_srai_epi16(v, 8) : _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8);
      best = _mm256_max_epi16(best, v);
    }
    // Words → bytes: packs within each 128-bit half, then the halves' low quadwords together.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi16(best, best), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j), _mm256_castsi256_si128(packed));
    if (j == len - 17) break;
  }
  row_tail(rows, nrows, kw, len - 1, len, y);
}

#else

void max_pool_row_s2_f32_avx512(const float* const* rows, int nrows, int64_t kw, int64_t len,
                                float* y) {
  row_tail(rows, nrows, kw, 0, len, y);
}
void max_pool_row_s2_f32_avx2(const float* const* rows, int nrows, int64_t kw, int64_t len,
                              float* y) {
  row_tail(rows, nrows, kw, 0, len, y);
}
void max_pool_row_s2_i8_avx512(const int8_t* const* rows, int nrows, int64_t kw, int64_t len,
                               int8_t* y) {
  row_tail(rows, nrows, kw, 0, len, y);
}
void max_pool_row_s2_i8_avx2(const int8_t* const* rows, int nrows, int64_t kw, int64_t len,
                             int8_t* y) {
  row_tail(rows, nrows, kw, 0, len, y);
}

#endif

}  // namespace ember::kernels::portable
