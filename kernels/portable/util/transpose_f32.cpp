#include "kernels/portable/util/transpose_f32.h"

#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
#endif

namespace ember::kernels::portable {
namespace {

constexpr int64_t kBlock = 16;

// Rows [i0, i1) × columns [j0, j1), element by element.
void copy_block(const float* src, int64_t src_rs, float* dst, int64_t dst_rs, int64_t i0,
                int64_t i1, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) {
    float* d = dst + j * dst_rs;
    for (int64_t i = i0; i < i1; ++i) d[i] = src[i * src_rs + j];
  }
}

void transpose_blocked(const float* src, int64_t src_rs, float* dst, int64_t dst_rs,
                       int64_t rows, int64_t cols) {
  for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
    const int64_t j1 = j0 + kBlock < cols ? j0 + kBlock : cols;
    for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
      const int64_t i1 = i0 + kBlock < rows ? i0 + kBlock : rows;
      copy_block(src, src_rs, dst, dst_rs, i0, i1, j0, j1);
    }
  }
}

#if EMBER_ISA_X86
// One 8×8 block: rows of src in, rows of dst out.
EMBER_TARGET_AVX2_FMA inline void transpose_8x8(const float* src, int64_t src_rs, float* dst,
                                                int64_t dst_rs) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_rs);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  // t[0] = a0 b0 a1 b1 | a4 b4 a5 b5, t[1] = a2 b2 a3 b3 | a6 b6 a7 b7, ...
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);      // a0 b0 c0 d0 | a4 b4 c4 d4
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);  // a1 b1 c1 d1 | a5 ...
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_rs, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_rs, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

EMBER_TARGET_AVX2_FMA void transpose_avx2(const float* src, int64_t src_rs, float* dst,
                                          int64_t dst_rs, int64_t rows, int64_t cols) {
  const int64_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  for (int64_t j0 = 0; j0 < cols8; j0 += kBlock) {
    const int64_t j1 = j0 + kBlock < cols8 ? j0 + kBlock : cols8;
    for (int64_t i = 0; i < rows8; i += 8) {
      for (int64_t j = j0; j < j1; j += 8) {
        transpose_8x8(src + i * src_rs + j, src_rs, dst + j * dst_rs + i, dst_rs);
      }
    }
  }
  copy_block(src, src_rs, dst, dst_rs, rows8, rows, 0, cols);
  copy_block(src, src_rs, dst, dst_rs, 0, rows8, cols8, cols);
}
#endif

}  // namespace

void transpose_f32(const float* src, int64_t src_rs, float* dst, int64_t dst_rs, int64_t rows,
                   int64_t cols, Isa isa) {
#if EMBER_ISA_X86
  if (isa >= Isa::kAvx2) {
    transpose_avx2(src, src_rs, dst, dst_rs, rows, cols);
    return;
  }
#else
  (void)isa;
#endif
  transpose_blocked(src, src_rs, dst, dst_rs, rows, cols);
}

}  // namespace ember::kernels::portable
