#include "kernels/quantized/util/qweight_int8.h"

#include <cstring>

#include "kernels/portable/util/isa_target.h"
#include "kernels/quantized/util/qweight_gemv.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 reduction and widening intrinsics start from
// _mm*_undefined_*(), which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ember::kernels::quantized {
namespace {

constexpr int64_t kLine = kInt8Rows * kInt8Chunk;  // 64 bytes

int64_t blocks_of(int64_t n) { return (n + kInt8Rows - 1) / kInt8Rows; }
int64_t chunks_of(int64_t k) { return (k + kInt8Chunk - 1) / kInt8Chunk; }

// Lines of one group (the whole row's when there is one group).
int64_t group_lines(const Int8Weights& w) {
  return w.groups == 1 ? w.chunks : w.group / kInt8Chunk;
}

// The plain loops, one weight row and input row at a time.
void gemv_baseline(const Int8Weights& w, const float* x, int64_t rows, int64_t first,
                   int64_t last, const float* bias, float* y) {
  for (int64_t row = first; row < last; ++row) {
    const int64_t b = row / kInt8Rows, r = row % kInt8Rows;
    const int8_t* block = w.data + b * w.chunks * kLine;
    for (int64_t m = 0; m < rows; ++m) {
      const float* xm = x + m * w.k;
      float acc = 0.0f;
      for (int64_t g = 0; g < w.groups; ++g) {
        float dot = 0.0f, xs = 0.0f;
        for (int64_t kk = g * w.group; kk < (g + 1) * w.group; ++kk) {
          const int8_t q = block[kk / kInt8Chunk * kLine + r * kInt8Chunk + kk % kInt8Chunk];
          dot += xm[kk] * static_cast<float>(q);
          xs += xm[kk];
        }
        const int64_t at = (b * w.groups + g) * kInt8Rows + r;
        acc += w.scales[at] * dot;
        if (w.zeros != nullptr) acc -= w.scales[at] * w.zeros[at] * xs;
      }
      y[m * w.n + row] = bias != nullptr ? acc + bias[row] : acc;
    }
  }
}

#if EMBER_ISA_X86

// Bytes ahead of the weight stream the kernels prefetch, into L2 (T1): on a
// Zen 4 core, prefetching into L1 (T0) kept the L1's few miss buffers full,
// 15-19 G weights/s per channel against 21-23 into L2 (2 threads: 25-29
// against 36-43).
constexpr int64_t kPrefetch = 8192;

EMBER_TARGET_AVX512 inline __m512 widen16_avx512(const int8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p))));
}

// One line (4 rows × 16 weights) into accumulator set kSet, for M input rows.
template <int M, int S, int kSet, bool kZeros>
EMBER_TARGET_AVX512 inline __attribute__((always_inline)) void line_avx512(
    const float* x, int64_t k, int64_t c, int64_t full, __mmask16 tail, const int8_t*& p,
    __m512 (&ga)[S][M][kInt8Rows], __m512 (&xs)[M]) {
  __m512 xv[M];
#pragma GCC unroll 2
  for (int m = 0; m < M; ++m) {
    const float* xc = x + m * k + c * kInt8Chunk;
    xv[m] = c < full ? _mm512_loadu_ps(xc) : _mm512_maskz_loadu_ps(tail, xc);
    if constexpr (kZeros) xs[m] = _mm512_add_ps(xs[m], xv[m]);
  }
  _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetch, _MM_HINT_T1);
#pragma GCC unroll 4
  for (int r = 0; r < kInt8Rows; ++r) {
    const __m512 wv = widen16_avx512(p + r * kInt8Chunk);
#pragma GCC unroll 2
    for (int m = 0; m < M; ++m) ga[kSet][m][r] = _mm512_fmadd_ps(xv[m], wv, ga[kSet][m][r]);
  }
  p += kLine;
}

// 4 weight rows × M (1 or 2) input rows per pass over a block: each line's
// 4 rows of 16 weights meet the same x vectors. Per group, the products go
// into their own accumulators (two sets for one input row, alternating
// lines: 8 chains), which the group's scale then adds to the row's; the
// zero point takes s·z·Σx from the group's x sums (kZeros).
template <int M, bool kZeros>
EMBER_TARGET_AVX512 void blocks_avx512(const Int8Weights& w, const float* x, int64_t b0,
                                       int64_t b1, int64_t last, const float* bias, float* y) {
  constexpr int S = M == 1 ? 2 : 1;
  const int64_t per_group = group_lines(w);
  const int64_t full = w.k / kInt8Chunk;  // lines with 16 valid k
  const __mmask16 tail = static_cast<__mmask16>((1u << (w.k % kInt8Chunk)) - 1);
  for (int64_t b = b0; b < b1; ++b) {
    const int8_t* p = w.data + b * w.chunks * kLine;
    const float* sb = w.scales + b * w.groups * kInt8Rows;
    const float* zb = kZeros ? w.zeros + b * w.groups * kInt8Rows : nullptr;
    __m512 acc[M][kInt8Rows];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
      for (int r = 0; r < kInt8Rows; ++r) acc[m][r] = _mm512_setzero_ps();
    }
    for (int64_t g = 0; g < w.groups; ++g) {
      __m512 ga[S][M][kInt8Rows];
      __m512 xs[M];
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m) {
        xs[m] = _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int r = 0; r < kInt8Rows; ++r) {
#pragma GCC unroll 2
          for (int s = 0; s < S; ++s) ga[s][m][r] = _mm512_setzero_ps();
        }
      }
      const int64_t c0 = g * per_group, c1 = c0 + per_group;
      int64_t c = c0;
      for (; c + S <= c1; c += S) {
        line_avx512<M, S, 0, kZeros>(x, w.k, c, full, tail, p, ga, xs);
        if constexpr (S == 2) {
          line_avx512<M, S, S - 1, kZeros>(x, w.k, c + 1, full, tail, p, ga, xs);
        }
      }
      if (c < c1) line_avx512<M, S, 0, kZeros>(x, w.k, c, full, tail, p, ga, xs);
#pragma GCC unroll 4
      for (int r = 0; r < kInt8Rows; ++r) {
        const float sc = sb[g * kInt8Rows + r];
        const __m512 vs = _mm512_set1_ps(sc);
#pragma GCC unroll 2
        for (int m = 0; m < M; ++m) {
          const __m512 dot = S == 2 ? _mm512_add_ps(ga[0][m][r], ga[S - 1][m][r]) : ga[0][m][r];
          acc[m][r] = _mm512_fmadd_ps(vs, dot, acc[m][r]);
          if constexpr (kZeros) {
            acc[m][r] = _mm512_fnmadd_ps(_mm512_set1_ps(sc * zb[g * kInt8Rows + r]), xs[m],
                                         acc[m][r]);
          }
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < kInt8Rows; ++r) {
      const int64_t row = b * kInt8Rows + r;
      if (row >= last) break;
#pragma GCC unroll 2
      for (int m = 0; m < M; ++m) {
        const float sum = _mm512_reduce_add_ps(acc[m][r]);
        y[m * w.n + row] = bias != nullptr ? sum + bias[row] : sum;
      }
    }
  }
}

template <bool kZeros>
EMBER_TARGET_AVX512 void gemv_avx512(const Int8Weights& w, const float* x, int64_t rows,
                                     int64_t b0, int64_t b1, int64_t last, const float* bias,
                                     float* y) {
  // Input rows in pairs (the accumulators of more fill the 32 registers); a
  // block's second pass reads its weights from the cache.
  int64_t m = 0;
  for (; m + 2 <= rows; m += 2) {
    blocks_avx512<2, kZeros>(w, x + m * w.k, b0, b1, last, bias, y + m * w.n);
  }
  if (m < rows) blocks_avx512<1, kZeros>(w, x + m * w.k, b0, b1, last, bias, y + m * w.n);
}

// AVX2: one input row per pass; a line's 16 weights of a row as two 8-wide
// halves, each half its own set of accumulators.
EMBER_TARGET_AVX2_FMA inline float hsum_avx2(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

template <bool kZeros>
EMBER_TARGET_AVX2_FMA void blocks_avx2(const Int8Weights& w, const float* x, int64_t b0,
                                       int64_t b1, int64_t last, const float* bias, float* y) {
  const int64_t per_group = group_lines(w);
  const int64_t full = w.k / kInt8Chunk;
  for (int64_t b = b0; b < b1; ++b) {
    const int8_t* p = w.data + b * w.chunks * kLine;
    const float* sb = w.scales + b * w.groups * kInt8Rows;
    const float* zb = kZeros ? w.zeros + b * w.groups * kInt8Rows : nullptr;
    __m256 acc[kInt8Rows];
#pragma GCC unroll 4
    for (int r = 0; r < kInt8Rows; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t g = 0; g < w.groups; ++g) {
      __m256 lo[kInt8Rows], hi[kInt8Rows];
#pragma GCC unroll 4
      for (int r = 0; r < kInt8Rows; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
      __m256 xs = _mm256_setzero_ps();
      const int64_t c0 = g * per_group, c1 = c0 + per_group;
      for (int64_t c = c0; c < c1; ++c, p += kLine) {
        const float* xc = x + c * kInt8Chunk;
        __m256 xl, xh;
        if (c < full) {
          xl = _mm256_loadu_ps(xc);
          xh = _mm256_loadu_ps(xc + 8);
        } else {
          alignas(32) float buf[kInt8Chunk] = {};
          std::memcpy(buf, xc, sizeof(float) * static_cast<size_t>(w.k - c * kInt8Chunk));
          xl = _mm256_load_ps(buf);
          xh = _mm256_load_ps(buf + 8);
        }
        if constexpr (kZeros) xs = _mm256_add_ps(xs, _mm256_add_ps(xl, xh));
        _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetch, _MM_HINT_T1);
#pragma GCC unroll 4
        for (int r = 0; r < kInt8Rows; ++r) {
          const __m128i q = _mm_load_si128(reinterpret_cast<const __m128i*>(p + r * kInt8Chunk));
          const __m256 wl = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
          const __m256 wh = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)));
          lo[r] = _mm256_fmadd_ps(xl, wl, lo[r]);
          hi[r] = _mm256_fmadd_ps(xh, wh, hi[r]);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < kInt8Rows; ++r) {
        const float sc = sb[g * kInt8Rows + r];
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(sc), _mm256_add_ps(lo[r], hi[r]), acc[r]);
        if constexpr (kZeros) {
          acc[r] = _mm256_fnmadd_ps(_mm256_set1_ps(sc * zb[g * kInt8Rows + r]), xs, acc[r]);
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < kInt8Rows; ++r) {
      const int64_t row = b * kInt8Rows + r;
      if (row >= last) break;
      const float sum = hsum_avx2(acc[r]);
      y[row] = bias != nullptr ? sum + bias[row] : sum;
    }
  }
}

#endif  // EMBER_ISA_X86

}  // namespace

bool qweight_int8_packs(int64_t k, int64_t group) {
  return k > 0 && group > 0 && k % group == 0 && (group == k || group % kInt8Chunk == 0);
}

size_t qweight_int8_packed_bytes(int64_t n, int64_t k, int64_t group, bool with_zeros) {
  const int64_t blocks = blocks_of(n);
  const int64_t headers = blocks * (k / group) * kInt8Rows * (with_zeros ? 2 : 1);
  return static_cast<size_t>(blocks * chunks_of(k) * kLine) +
         static_cast<size_t>(headers) * sizeof(float);
}

bool qweight_int8_has_zeros(const float* zeros, int64_t count) {
  if (zeros == nullptr) return false;
  for (int64_t i = 0; i < count; ++i) {
    if (zeros[i] != 0.0f) return true;
  }
  return false;
}

Int8Weights qweight_int8_pack(const int8_t* w, const float* scales, const float* zeros,
                              int64_t n, int64_t k, int64_t group, void* mem) {
  Int8Weights out;
  out.n = n;
  out.k = k;
  out.group = group;
  out.groups = k / group;
  out.chunks = chunks_of(k);
  const int64_t blocks = blocks_of(n);
  auto* data = static_cast<int8_t*>(mem);
  std::memset(data, 0, static_cast<size_t>(blocks * out.chunks * kLine));
  for (int64_t row = 0; row < n; ++row) {
    int8_t* dst = data + row / kInt8Rows * out.chunks * kLine + row % kInt8Rows * kInt8Chunk;
    const int8_t* src = w + row * k;
    for (int64_t c = 0; c < out.chunks; ++c) {
      const int64_t len = k - c * kInt8Chunk < kInt8Chunk ? k - c * kInt8Chunk : kInt8Chunk;
      std::memcpy(dst + c * kLine, src + c * kInt8Chunk, static_cast<size_t>(len));
    }
  }
  const bool with_zeros = qweight_int8_has_zeros(zeros, n * out.groups);
  auto* s = reinterpret_cast<float*>(data + blocks * out.chunks * kLine);
  float* z = with_zeros ? s + blocks * out.groups * kInt8Rows : nullptr;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t g = 0; g < out.groups; ++g) {
      for (int64_t r = 0; r < kInt8Rows; ++r) {
        const int64_t row = b * kInt8Rows + r, at = (b * out.groups + g) * kInt8Rows + r;
        s[at] = row < n ? scales[row * out.groups + g] : 0.0f;
        if (z != nullptr) z[at] = row < n ? zeros[row * out.groups + g] : 0.0f;
      }
    }
  }
  out.data = data;
  out.scales = s;
  out.zeros = z;
  return out;
}

void qweight_int8_dequantize(const Int8Weights& w, int64_t row, int64_t k0, int64_t count,
                             float* dst, portable::Isa isa) {
  const int64_t b = row / kInt8Rows, r = row % kInt8Rows;
  const int8_t* block = w.data + b * w.chunks * kLine + r * kInt8Chunk;
  int64_t i = 0;
  while (i < count) {
    const int64_t kk = k0 + i, off = kk % kInt8Chunk;
    int64_t run = kInt8Chunk - off;
    if (run > count - i) run = count - i;
    const int64_t at = (b * w.groups + kk / w.group) * kInt8Rows + r;
    const float z = w.zeros != nullptr ? w.zeros[at] : 0.0f;
    qweight_dequantize(block + kk / kInt8Chunk * kLine + off, run, z, w.scales[at], dst + i,
                       isa);
    i += run;
  }
}

void qweight_int8_gemv(const Int8Weights& w, const float* x, int64_t rows, int64_t first,
                       int64_t last, const float* bias, float* y, portable::Isa isa) {
  if (first >= last || rows <= 0) return;
#if EMBER_ISA_X86
  const int64_t b0 = first / kInt8Rows, b1 = (last + kInt8Rows - 1) / kInt8Rows;
  if (isa >= portable::Isa::kAvx512) {
    if (w.zeros != nullptr) {
      gemv_avx512<true>(w, x, rows, b0, b1, last, bias, y);
    } else {
      gemv_avx512<false>(w, x, rows, b0, b1, last, bias, y);
    }
    return;
  }
  if (isa >= portable::Isa::kAvx2) {
    for (int64_t m = 0; m < rows; ++m) {
      if (w.zeros != nullptr) {
        blocks_avx2<true>(w, x + m * w.k, b0, b1, last, bias, y + m * w.n);
      } else {
        blocks_avx2<false>(w, x + m * w.k, b0, b1, last, bias, y + m * w.n);
      }
    }
    return;
  }
#else
  (void)isa;
#endif
  gemv_baseline(w, x, rows, first, last, bias, y);
}

}  // namespace ember::kernels::quantized
