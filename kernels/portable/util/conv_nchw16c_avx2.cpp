// nchw16c_row_avx2: the NCHW16c convolution's row kernel for CPUs with AVX2
// and FMA (conv_nchw16c.h), compiled through a target attribute and called
// only when cpu_isa() says the host runs it.
//
// The tile is P ≤ 6 consecutive output positions × one 16-channel block (two
// ymm halves): 12 accumulators, two weight vectors and one broadcast of the
// 16 registers. Each output is the AVX-512 kernel's chain of FMAs, so the two
// give the same bits.
#include "kernels/portable/util/conv_nchw16c.h"
#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
#endif

namespace ember::kernels::portable {

#if EMBER_ISA_X86

namespace {

constexpr int kPos = 6;  // positions per tile

EMBER_TARGET_AVX2_FMA inline __m256i lane_mask(int lanes) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), idx);
}

// kPlain: a plain NCHW input, as in conv_nchw16c_avx512.cpp.
template <int P, int S, bool kPlain>
EMBER_TARGET_AVX2_FMA inline void tile(const Nchw16cRow& r, int64_t i0, int32_t b,
                                       LinePrefetch<>& pf) {
  constexpr int64_t kStep = kPlain ? S : 16 * S;
  const int64_t wrow = static_cast<int64_t>(r.blocks) * 16;
  __m256 acc[P][2];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) {
    if (r.accumulate) {
      const float* o = r.out + b * r.out_block + (i0 + j) * 16;
      acc[j][0] = _mm256_loadu_ps(o);
      acc[j][1] = _mm256_loadu_ps(o + 8);
    } else {
      acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    }
  }
  const float* w = r.w + b * 16;
  const float* base = r.in + i0 * kStep;
  for (int32_t t = 0; t < r.taps; ++t) {
    const float* x = base + r.tap_off[t];
    for (int64_t cb = 0; cb < r.cin_blocks; ++cb) {
      const int channels = kPlain ? r.channels : 16;
#pragma GCC unroll 4
      for (int c = 0; c < channels; ++c) {
        const float* xc = kPlain ? x + c * r.in_channel : x + c;
        const __m256 w0 = _mm256_loadu_ps(w + c * wrow);
        const __m256 w1 = _mm256_loadu_ps(w + c * wrow + 8);
#pragma GCC unroll 8
        for (int j = 0; j < P; ++j) {
          const __m256 xv = _mm256_broadcast_ss(xc + j * kStep);
          acc[j][0] = _mm256_fmadd_ps(xv, w0, acc[j][0]);
          acc[j][1] = _mm256_fmadd_ps(xv, w1, acc[j][1]);
        }
      }
      x += r.in_block;
      w += 16 * wrow;
      pf.step();
    }
  }
  if (!r.finish) {
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) {
      float* o = r.out + b * r.out_block + (i0 + j) * 16;
      _mm256_storeu_ps(o, acc[j][0]);
      _mm256_storeu_ps(o + 8, acc[j][1]);
    }
    return;
  }
  const __m256 lo = _mm256_set1_ps(r.lo), hi = _mm256_set1_ps(r.hi);
  const int lanes = b == r.blocks - 1 ? r.last_lanes : 16;
  const __m256i keep0 = lane_mask(lanes), keep1 = lane_mask(lanes - 8);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m256 bias = _mm256_loadu_ps(r.bias + b * 16 + h * 8);
    const __m256 keep = _mm256_castsi256_ps(h == 0 ? keep0 : keep1);
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) {
      const int64_t at = b * r.out_block + (i0 + j) * 16 + h * 8;
      __m256 v = _mm256_add_ps(acc[j][h], bias);
      if (r.residual != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(r.residual + at));
      // max/min return their second operand when either is NaN: NaN stays.
      if (r.clamp) v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
      _mm256_storeu_ps(r.out + at, _mm256_and_ps(v, keep));
    }
  }
}

template <int S, bool kPlain>
EMBER_TARGET_AVX2_FMA void tail(const Nchw16cRow& r, int64_t i, int64_t n, int32_t b,
                                LinePrefetch<>& pf) {
  switch (n) {
    case 1: tile<1, S, kPlain>(r, i, b, pf); break;
    case 2: tile<2, S, kPlain>(r, i, b, pf); break;
    case 3: tile<3, S, kPlain>(r, i, b, pf); break;
    case 4: tile<4, S, kPlain>(r, i, b, pf); break;
    case 5: tile<5, S, kPlain>(r, i, b, pf); break;
    case 6: tile<6, S, kPlain>(r, i, b, pf); break;
    default: break;
  }
}

template <int S, bool kPlain>
EMBER_TARGET_AVX2_FMA void row(const Nchw16cRow& r) {
  const Nchw16cRowSplit split = nchw16c_split_row(r.n, kPos);
  LinePrefetch<> pf = nchw16c_row_prefetch(
      r, r.blocks * (split.full + (split.first > 0 ? 1 : 0) + (split.second > 0 ? 1 : 0)));
  for (int32_t b = 0; b < r.blocks; ++b) {
    int64_t i = 0;
    for (int64_t t = 0; t < split.full; ++t, i += kPos) tile<kPos, S, kPlain>(r, i, b, pf);
    tail<S, kPlain>(r, i, split.first, b, pf);
    tail<S, kPlain>(r, i + split.first, split.second, b, pf);
  }
}

}  // namespace

void nchw16c_row_avx2(const Nchw16cRow& r) {
  const bool plain = r.plain;
  const bool s2 = r.in_step == (plain ? 2 : 32);
  if (plain) {
    s2 ? row<2, true>(r) : row<1, true>(r);
  } else {
    s2 ? row<2, false>(r) : row<1, false>(r);
  }
}

#else

void nchw16c_row_avx2(const Nchw16cRow& r) { nchw16c_row_portable(r); }

#endif

}  // namespace ember::kernels::portable
