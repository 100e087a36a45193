// nchw16c_row_avx512: the NCHW16c convolution's row kernel for CPUs with
// AVX-512 (conv_nchw16c.h). Compiled through a target attribute (the build
// targets baseline x86-64); conv_nchw16c.cpp calls it only when cpu_isa()
// says the host runs it.
//
// The tile is P ≤ 7 consecutive output positions × the group's NB ≤ 4
// output blocks: 28 zmm accumulators, NB weight vectors and one broadcast.
// Per input channel it loads NB weight vectors and broadcasts P input values
// (from the input in place: a position's block is 16 contiguous floats, its
// neighbour's 16·stride floats further) for P·NB FMAs: 11 loads per 28 FMAs,
// under the two load ports' rate on a core with two FMA ports.
#include "kernels/portable/util/conv_nchw16c.h"
#include "kernels/portable/util/isa_target.h"

// GCC 12's AVX-512 min/max intrinsics start from _mm512_undefined_ps(), which
// -Wmaybe-uninitialized reports as a false positive (gemm_epilogue_f32.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#if EMBER_ISA_X86
#include <immintrin.h>
#endif

namespace ember::kernels::portable {

#if EMBER_ISA_X86

namespace {

constexpr int kPos = 7;  // positions per tile

// kPlain: a plain NCHW input (r.channels channels r.in_channel apart, a
// position `stride` floats from the next) rather than a blocked one.
template <int P, int NB, int S, bool kPlain>
EMBER_TARGET_AVX512 inline void tile(const Nchw16cRow& r, int64_t i0, LinePrefetch<>& pf) {
  constexpr int64_t kStep = kPlain ? S : 16 * S;
  __m512 acc[P][NB];
#pragma GCC unroll 8
  for (int j = 0; j < P; ++j) {
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) {
      acc[j][b] = r.accumulate ? _mm512_loadu_ps(r.out + b * r.out_block + (i0 + j) * 16)
                               : _mm512_setzero_ps();
    }
  }
  const float* w = r.w;
  const float* base = r.in + i0 * kStep;
  for (int32_t t = 0; t < r.taps; ++t) {
    const float* x = base + r.tap_off[t];
    for (int64_t cb = 0; cb < r.cin_blocks; ++cb) {
      const int channels = kPlain ? r.channels : 16;
#pragma GCC unroll 4
      for (int c = 0; c < channels; ++c) {
        const float* xc = kPlain ? x + c * r.in_channel : x + c;
        __m512 wv[NB];
#pragma GCC unroll 4
        for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_ps(w + (c * NB + b) * 16);
#pragma GCC unroll 8
        for (int j = 0; j < P; ++j) {
          const __m512 xv = _mm512_set1_ps(xc[j * kStep]);
#pragma GCC unroll 4
          for (int b = 0; b < NB; ++b) acc[j][b] = _mm512_fmadd_ps(xv, wv[b], acc[j][b]);
        }
      }
      x += r.in_block;
      w += 16 * NB * 16;
      pf.step();
    }
  }
  if (!r.finish) {
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) {
#pragma GCC unroll 8
      for (int j = 0; j < P; ++j) _mm512_storeu_ps(r.out + b * r.out_block + (i0 + j) * 16, acc[j][b]);
    }
    return;
  }
  const __m512 lo = _mm512_set1_ps(r.lo), hi = _mm512_set1_ps(r.hi);
  const __mmask16 last = static_cast<__mmask16>((1u << r.last_lanes) - 1u);
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b) {
    const __m512 bias = _mm512_loadu_ps(r.bias + b * 16);
    const __mmask16 keep = b == NB - 1 ? last : static_cast<__mmask16>(0xffff);
#pragma GCC unroll 8
    for (int j = 0; j < P; ++j) {
      const int64_t at = b * r.out_block + (i0 + j) * 16;
      __m512 v = _mm512_add_ps(acc[j][b], bias);
      if (r.residual != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(r.residual + at));
      // max/min return their second operand when either is NaN: NaN stays.
      if (r.clamp) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
      _mm512_storeu_ps(r.out + at, _mm512_maskz_mov_ps(keep, v));
    }
  }
}

template <int NB, int S, bool kPlain>
EMBER_TARGET_AVX512 void tail(const Nchw16cRow& r, int64_t i, int64_t n, LinePrefetch<>& pf) {
  switch (n) {
    case 1: tile<1, NB, S, kPlain>(r, i, pf); break;
    case 2: tile<2, NB, S, kPlain>(r, i, pf); break;
    case 3: tile<3, NB, S, kPlain>(r, i, pf); break;
    case 4: tile<4, NB, S, kPlain>(r, i, pf); break;
    case 5: tile<5, NB, S, kPlain>(r, i, pf); break;
    case 6: tile<6, NB, S, kPlain>(r, i, pf); break;
    case 7: tile<7, NB, S, kPlain>(r, i, pf); break;
    default: break;
  }
}

template <int NB, int S, bool kPlain>
EMBER_TARGET_AVX512 void row(const Nchw16cRow& r) {
  const Nchw16cRowSplit split = nchw16c_split_row(r.n, kPos);
  LinePrefetch<> pf = nchw16c_row_prefetch(
      r, split.full + (split.first > 0 ? 1 : 0) + (split.second > 0 ? 1 : 0));
  int64_t i = 0;
  for (int64_t t = 0; t < split.full; ++t, i += kPos) tile<kPos, NB, S, kPlain>(r, i, pf);
  tail<NB, S, kPlain>(r, i, split.first, pf);
  tail<NB, S, kPlain>(r, i + split.first, split.second, pf);
}

template <int S, bool kPlain>
void row_for(const Nchw16cRow& r) {
  switch (r.blocks) {
    case 1: row<1, S, kPlain>(r); break;
    case 2: row<2, S, kPlain>(r); break;
    case 3: row<3, S, kPlain>(r); break;
    default: row<4, S, kPlain>(r); break;
  }
}

}  // namespace

void nchw16c_row_avx512(const Nchw16cRow& r) {
  const bool plain = r.plain;
  const bool s2 = r.in_step == (plain ? 2 : 32);
  if (plain) {
    s2 ? row_for<2, true>(r) : row_for<1, true>(r);
  } else {
    s2 ? row_for<2, false>(r) : row_for<1, false>(r);
  }
}

#else

void nchw16c_row_avx512(const Nchw16cRow& r) { nchw16c_row_portable(r); }

#endif

}  // namespace ember::kernels::portable
