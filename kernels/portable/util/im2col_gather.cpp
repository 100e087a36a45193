// im2col_gather_strip (im2col_gather.h): AVX-512 masked gathers of 16 lanes,
// AVX2 gathers of 8, and the plain loop. Lanes past `cols` and lanes whose
// offset is −1 are masked off: they read nothing and get 0.
#include "kernels/portable/util/im2col_gather.h"

#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
#endif

// GCC 12's AVX-512 gather intrinsics start from an undefined vector, which
// -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ember::kernels::portable {
namespace {

void gather_baseline(const float* x, int64_t s_c, const Im2colTable& table, int64_t p0,
                     int64_t kc, int64_t j0, int64_t cols, int nr, float* dst) {
  int64_t c = p0 / table.taps, t = p0 - c * table.taps;
  for (int64_t p = 0; p < kc; ++p) {
    const float* plane = x + c * s_c;
    const int32_t* off = table.offsets + t * table.row + j0;
    float* d = dst + p * nr;
    for (int64_t j = 0; j < nr; ++j) d[j] = j < cols && off[j] >= 0 ? plane[off[j]] : 0.0f;
    if (++t == table.taps) {
      t = 0;
      ++c;
    }
  }
}

#if EMBER_ISA_X86

EMBER_TARGET_AVX512 void gather_avx512(const float* x, int64_t s_c, const Im2colTable& table,
                                       int64_t p0, int64_t kc, int64_t j0, int64_t cols, int nr,
                                       float* dst) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512i none = _mm512_set1_epi32(-1);
  __mmask16 in[2];
  for (int h = 0; h < 2; ++h) {
    const int64_t left = cols - 16 * h;
    in[h] = left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
  }
  const int halves = nr / 16;
  int64_t c = p0 / table.taps, t = p0 - c * table.taps;
  for (int64_t p = 0; p < kc; ++p) {
    const float* plane = x + c * s_c;
    const int32_t* off = table.offsets + t * table.row + j0;
    float* d = dst + p * nr;
    for (int h = 0; h < halves; ++h) {
      const __m512i idx = _mm512_mask_loadu_epi32(none, in[h], off + 16 * h);
      const __mmask16 take = _mm512_mask_cmpge_epi32_mask(in[h], idx, _mm512_setzero_si512());
      _mm512_storeu_ps(d + 16 * h, _mm512_mask_i32gather_ps(zero, take, idx, plane, 4));
    }
    if (++t == table.taps) {
      t = 0;
      ++c;
    }
  }
}

EMBER_TARGET_AVX2_FMA void gather_avx2(const float* x, int64_t s_c, const Im2colTable& table,
                                       int64_t p0, int64_t kc, int64_t j0, int64_t cols, int nr,
                                       float* dst) {
  const int parts = nr / 8;
  __m256i in[4];
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int h = 0; h < parts; ++h) {
    in[h] = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(cols - 8 * h)), lane);
  }
  int64_t c = p0 / table.taps, t = p0 - c * table.taps;
  for (int64_t p = 0; p < kc; ++p) {
    const float* plane = x + c * s_c;
    const int32_t* off = table.offsets + t * table.row + j0;
    float* d = dst + p * nr;
    for (int h = 0; h < parts; ++h) {
      const __m256i idx = _mm256_maskload_epi32(off + 8 * h, in[h]);  // masked lanes: 0
      const __m256i take = _mm256_and_si256(
          in[h], _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(-1)));
      _mm256_storeu_ps(d + 8 * h, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), plane, idx,
                                                           _mm256_castsi256_ps(take), 4));
    }
    if (++t == table.taps) {
      t = 0;
      ++c;
    }
  }
}

#endif

}  // namespace

void im2col_gather_strip_at(Isa isa, const float* x, int64_t s_c, const Im2colTable& table,
                            int64_t p0, int64_t kc, int64_t j0, int64_t cols, int nr, float* dst) {
#if EMBER_ISA_X86
  if (isa >= Isa::kAvx512 && nr % 16 == 0 && nr <= 32) {
    gather_avx512(x, s_c, table, p0, kc, j0, cols, nr, dst);
    return;
  }
  if (isa >= Isa::kAvx2 && nr % 8 == 0 && nr <= 32) {
    gather_avx2(x, s_c, table, p0, kc, j0, cols, nr, dst);
    return;
  }
#else
  (void)isa;
#endif
  gather_baseline(x, s_c, table, p0, kc, j0, cols, nr, dst);
}

void im2col_gather_strip(const float* x, int64_t s_c, const Im2colTable& table, int64_t p0,
                         int64_t kc, int64_t j0, int64_t cols, int nr, float* dst) {
  im2col_gather_strip_at(cpu_isa(), x, s_c, table, p0, kc, j0, cols, nr, dst);
}

}  // namespace ember::kernels::portable
