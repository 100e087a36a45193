#include "kernels/quantized/util/qlinear_avx2.h"

#include <cstring>

#include "kernels/quantized/util/qlinear_split.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EMBER_QLINEAR_AVX2 1
#else
#define EMBER_QLINEAR_AVX2 0
#endif

namespace ember::kernels::quantized {
namespace {

constexpr int kPanel = 16;  // Output channels per panel (two ymm of int32).
constexpr int kTile = 6;    // Tokens per microkernel tile (12 accumulators).
// Tokens per block: a block's activation rows stay in L2 (512 KiB on the
// AVX2-only EPYCs) while every panel of the task passes over them.
constexpr int64_t kRowsBlockBytes = 256 * 1024;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

size_t qlinear16_packed_bytes(int64_t n, int64_t k) {
  return static_cast<size_t>(round_up(n, kPanel) * round_up(k, 2)) * sizeof(int16_t);
}

QLinear16Weights qlinear16_pack_weights(const int8_t* w, int64_t n, int64_t k, void* data) {
  QLinear16Weights p;
  p.n = n;
  p.k = k;
  p.kp = round_up(k, 2);
  p.data = static_cast<const int16_t*>(data);
  const int64_t panels = (n + kPanel - 1) / kPanel, kg = p.kp / 2;
  auto* d = static_cast<int16_t*>(data);
  for (int64_t pn = 0; pn < panels; ++pn) {
    for (int64_t g = 0; g < kg; ++g) {
      int16_t* dg = d + (pn * kg + g) * kPanel * 2;
      for (int j = 0; j < kPanel; ++j) {
        const int64_t r = pn * kPanel + j;
        for (int t = 0; t < 2; ++t) {
          const int64_t kk = g * 2 + t;
          dg[j * 2 + t] = r < n && kk < k ? w[r * k + kk] : int16_t{0};
        }
      }
    }
  }
  return p;
}

size_t qlinear16_rows_bytes(int64_t tokens, int64_t k) {
  return static_cast<size_t>(round_up(tokens * round_up(k, 2) * 2, 64));
}

#if EMBER_QLINEAR_AVX2

namespace {

#define EMBER_QLIN16_TARGET __attribute__((target("avx2")))

// The sums of an R×16 tile (R ≤ 6 tokens) over kg pairs of k: token i's
// pair g (two int16, one int32) is broadcast from a + i·lda + 2g; the
// panel's 32 int16 of the pair are two vectors (channels 0–7 and 8–15).
// Named accumulators: GCC keeps an array of vectors in registers only
// partly (qgemm_avx512vnni.cpp).
template <int R>
EMBER_QLIN16_TARGET __attribute__((always_inline)) inline void dot_rows(int64_t kg,
                                                                       const int16_t* a,
                                                                       int64_t lda,
                                                                       const int16_t* b,
                                                                       __m256i (&c)[kTile][2]) {
#define EMBER_QLIN16_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define EMBER_QLIN16_ZERO(i)                                                   \
  __m256i c##i##0 = _mm256_setzero_si256(), c##i##1 = c##i##0;                 \
  const int16_t* a##i = a + (R > (i) ? (i) : 0) * lda;
  EMBER_QLIN16_ROWS(EMBER_QLIN16_ZERO)
  for (int64_t g = 0; g < kg; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
#define EMBER_QLIN16_ROW(i)                                          \
  if constexpr (R > (i)) {                                           \
    int32_t pair;                                                    \
    __builtin_memcpy(&pair, a##i + g * 2, sizeof(pair));             \
    const __m256i ai = _mm256_set1_epi32(pair);                      \
    c##i##0 = _mm256_add_epi32(c##i##0, _mm256_madd_epi16(ai, b0));  \
    c##i##1 = _mm256_add_epi32(c##i##1, _mm256_madd_epi16(ai, b1));  \
  }
    EMBER_QLIN16_ROWS(EMBER_QLIN16_ROW)
    b += 32;
  }
#define EMBER_QLIN16_OUT(i) c[i][0] = c##i##0; c[i][1] = c##i##1;
  EMBER_QLIN16_ROWS(EMBER_QLIN16_OUT)
#undef EMBER_QLIN16_OUT
#undef EMBER_QLIN16_ROW
#undef EMBER_QLIN16_ZERO
#undef EMBER_QLIN16_ROWS
}

// One panel's epilogue constants (per channel), and which of its 16
// channels exist.
struct PanelEpilogue {
  __m256 scale[2];  // scale[n] · scale_mul
  __m256 offset[2];
  __m256i mask[2];  // All ones for the panel's real channels.
  int cols;
};

EMBER_QLIN16_TARGET PanelEpilogue panel_epilogue(const QLinear16Weights& w, const QEpilogue& e,
                                                 int64_t n0) {
  PanelEpilogue p;
  p.cols = static_cast<int>(w.n - n0 < kPanel ? w.n - n0 : kPanel);
  const __m256 mul = _mm256_set1_ps(e.scale_mul);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int h = 0; h < 2; ++h) {
    p.mask[h] = _mm256_cmpgt_epi32(_mm256_set1_epi32(p.cols - 8 * h), lanes);
    // The product in float32, as the scalar epilogue forms it.
    p.scale[h] = _mm256_mul_ps(_mm256_maskload_ps(e.scale + n0 + 8 * h, p.mask[h]), mul);
    p.offset[h] = e.offset != nullptr ? _mm256_maskload_ps(e.offset + n0 + 8 * h, p.mask[h])
                                      : _mm256_setzero_ps();
  }
  return p;
}

// This target has no FMA, so the product and the sum round separately, as
// in the other kinds' epilogues.
EMBER_QLIN16_TARGET void store_float(const __m256i (&c)[kTile][2], const PanelEpilogue& p,
                                     int rows, float* out, int64_t ldc) {
  for (int i = 0; i < rows; ++i) {
    for (int h = 0; h < 2; ++h) {
      const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(c[i][h]), p.scale[h]),
                                     p.offset[h]);
      _mm256_maskstore_ps(out + i * ldc + 8 * h, p.mask[h], v);
    }
  }
}

EMBER_QLIN16_TARGET void store_int8(const __m256i (&c)[kTile][2], const PanelEpilogue& p,
                                    int rows, const QEpilogue& e, int8_t* out, int64_t ldc) {
  // CVTPS2DQ rounds half to even, as requantize's magic-number rounding does,
  // once the value is clamped.
  const __m256 lo = _mm256_set1_ps(static_cast<float>(e.lo - e.zp));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(e.hi - e.zp));
  const __m256i zp = _mm256_set1_epi32(e.zp);
  for (int i = 0; i < rows; ++i) {
    __m256i q[2];
    for (int h = 0; h < 2; ++h) {
      __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(c[i][h]), p.scale[h]),
                               p.offset[h]);
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      q[h] = _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
    }
    // In [−128, 127] already: the saturating packs only narrow (PACKSSDW
    // per 128-bit lane; the permute restores the channels' order).
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xD8);
    const __m128i bytes =
        _mm_packs_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    int8_t* dst = out + i * ldc;
    if (p.cols == kPanel) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), bytes);
    } else {
      alignas(16) int8_t row[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(row), bytes);
      std::memcpy(dst, row, static_cast<size_t>(p.cols));
    }
  }
}

template <int R>
EMBER_QLIN16_TARGET void tile(int64_t kg, const int16_t* a, int64_t lda, const int16_t* b,
                              const PanelEpilogue& p, const QEpilogue& e, int64_t t0, int64_t n0,
                              int64_t ldc) {
  __m256i c[kTile][2];
  dot_rows<R>(kg, a, lda, b, c);
  if (e.float_out) {
    store_float(c, p, R, static_cast<float*>(e.c) + t0 * ldc + n0, ldc);
  } else {
    store_int8(c, p, R, e, static_cast<int8_t*>(e.c) + t0 * ldc + n0, ldc);
  }
}

using TileFn = void (*)(int64_t, const int16_t*, int64_t, const int16_t*, const PanelEpilogue&,
                        const QEpilogue&, int64_t, int64_t, int64_t);
constexpr TileFn kTiles[kTile + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};

}  // namespace

EMBER_QLIN16_TARGET void qlinear16_pack_rows(const int8_t* x, int64_t tokens, int64_t k,
                                             int32_t zx, int16_t* dst) {
  const int64_t kp = round_up(k, 2);
  const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(zx));
  for (int64_t t = 0; t < tokens; ++t) {
    const int8_t* src = x + t * k;
    int16_t* d = dst + t * kp;
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      const __m256i v =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_sub_epi16(v, z));
    }
    for (; i < k; ++i) d[i] = static_cast<int16_t>(src[i] - zx);
    for (; i < kp; ++i) d[i] = 0;  // Meets zero weights only.
  }
}

void qlinear16_run(KernelContext& ctx, const QLinear16Weights& w, const int16_t* rows,
                   int64_t tokens, const QEpilogue& e) {
  if (tokens <= 0 || w.n <= 0) return;
  const int64_t panels = (w.n + kPanel - 1) / kPanel, kg = w.kp / 2;
  const int64_t row_bytes = (w.kp > 0 ? w.kp : 1) * 2;
  int64_t block = kRowsBlockBytes / row_bytes / kTile * kTile;
  if (block < kTile) block = kTile;
  // Panel pn over tokens [b0, b1): its epilogue constants once, then the tiles.
  auto panel_block = [&](int64_t pn, int64_t b0, int64_t b1) {
    const PanelEpilogue pe = panel_epilogue(w, e, pn * kPanel);
    const int16_t* b = w.data + pn * kg * kPanel * 2;
    for (int64_t t0 = b0; t0 < b1; t0 += kTile) {
      const int n_rows = static_cast<int>(b1 - t0 < kTile ? b1 - t0 : kTile);
      kTiles[n_rows](kg, rows + t0 * w.kp, w.kp, b, pe, e, t0, pn * kPanel, w.n);
    }
  };
  qlinear_for_each_block(ctx, panels, tokens, kTile, block, panel_block);
}

#else

void qlinear16_pack_rows(const int8_t*, int64_t, int64_t, int32_t, int16_t*) {}
void qlinear16_run(KernelContext&, const QLinear16Weights&, const int16_t*, int64_t,
                   const QEpilogue&) {}

#endif

}  // namespace ember::kernels::quantized
