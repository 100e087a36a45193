#include "kernels/quantized/util/qlinear_vnni.h"

#include <cstring>

#include "kernels/portable/util/amx.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/quantized/util/qlinear_split.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/portable/util/amx_block.h"
#define EMBER_QLINEAR_VNNI 1
// GCC 12's AVX-512 conversion, min and max intrinsics start from
// _mm512_undefined_ps(), which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#else
#define EMBER_QLINEAR_VNNI 0
#endif

namespace ember::kernels::quantized {
namespace {

constexpr int kPanel = 32;  // Output channels per panel (two zmm of int32).
constexpr int kTile = 8;    // Tokens per microkernel tile.
// Tokens per block: a block's activation rows stay in L2 while every panel
// of the task passes over them.
constexpr int64_t kRowsBlockBytes = 512 * 1024;

// AMX: tokens per step (two A tiles) and k per tile (16 groups of 4).
constexpr int kAmxTokens = 32;
constexpr int kAmxDepth = 64;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int64_t padded_k(int64_t k, bool amx) { return round_up(k, amx ? kAmxDepth : 4); }

}  // namespace

bool qlinear_amx_available() { return portable::cpu_isa() >= portable::Isa::kAmx; }

size_t qlinear_packed_bytes(int64_t n, int64_t k, bool amx) {
  return static_cast<size_t>(round_up(n, kPanel) * padded_k(k, amx));
}

QLinearWeights qlinear_pack_weights(const int8_t* w, int64_t n, int64_t k, void* data,
                                    int32_t* col_sums, bool amx) {
  QLinearWeights p;
  p.n = n;
  p.k = k;
  p.kp = padded_k(k, amx);
  p.amx = amx;
  p.data = static_cast<const int8_t*>(data);
  p.col_sums = col_sums;
  const int64_t panels = (n + kPanel - 1) / kPanel, kg = p.kp / 4;
  auto* d = static_cast<int8_t*>(data);
  for (int64_t pn = 0; pn < panels; ++pn) {
    for (int64_t g = 0; g < kg; ++g) {
      int8_t* dg = d + (pn * kg + g) * kPanel * 4;
      for (int j = 0; j < kPanel; ++j) {
        const int64_t r = pn * kPanel + j;
        for (int t = 0; t < 4; ++t) {
          const int64_t kk = g * 4 + t;
          dg[j * 4 + t] = r < n && kk < k ? w[r * k + kk] : int8_t{0};
        }
      }
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    int32_t s = 0;
    for (int64_t kk = 0; kk < k; ++kk) s += w[r * k + kk];
    col_sums[r] = s;
  }
  return p;
}

size_t qlinear_rows_bytes(int64_t tokens, int64_t k, bool amx) {
  const int64_t rows = amx ? round_up(tokens, kAmxTokens) : tokens;
  return static_cast<size_t>(round_up(rows * padded_k(k, amx), 64));
}

namespace {

// The AMX blocks' rows past the last token: read by the tiles, never stored.
void pad_rows(int64_t tokens, int64_t kp, bool amx, uint8_t* dst) {
  if (!amx) return;
  const int64_t end = round_up(tokens, kAmxTokens);
  std::memset(dst + tokens * kp, 0x80, static_cast<size_t>((end - tokens) * kp));
}

}  // namespace

void qlinear_pack_rows(const int8_t* x, int64_t tokens, int64_t k, uint8_t* dst, bool amx) {
  const int64_t kp = padded_k(k, amx);
  for (int64_t t = 0; t < tokens; ++t) {
    const int8_t* src = x + t * k;
    uint8_t* d = dst + t * kp;
    for (int64_t i = 0; i < k; ++i) d[i] = static_cast<uint8_t>(src[i]) ^ 0x80u;
    for (int64_t i = k; i < kp; ++i) d[i] = 0x80u;  // Meets zero weights only.
  }
  pad_rows(tokens, kp, amx, dst);
}

#if EMBER_QLINEAR_VNNI
namespace {

#define EMBER_QLIN_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// The sums of an R×32 tile (R ≤ 8 tokens) over kg groups of 4 k: token i's
// 4 bytes of group g are broadcast from a + i·lda + 4g, the panel's 128
// bytes of the group are two vectors. Named accumulators, as in
// qgemm_avx512vnni.cpp (an array of vectors was copied and spilled).
template <int R>
EMBER_QLIN_TARGET __attribute__((always_inline)) inline void dot_rows(int64_t kg, const uint8_t* a,
                                                                      int64_t lda, const int8_t* b,
                                                                      __m512i (&c)[8][2]) {
#define EMBER_QLIN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define EMBER_QLIN_ZERO(i)                                                     \
  __m512i c##i##0 = _mm512_setzero_si512(), c##i##1 = c##i##0;                 \
  const uint8_t* a##i = a + (R > (i) ? (i) : 0) * lda;
  EMBER_QLIN_ROWS(EMBER_QLIN_ZERO)
  for (int64_t g = 0; g < kg; ++g) {
    const __m512i b0 = _mm512_loadu_si512(b);
    const __m512i b1 = _mm512_loadu_si512(b + 64);
#define EMBER_QLIN_ROW(i)                                        \
  if constexpr (R > (i)) {                                       \
    int32_t quad;                                                \
    __builtin_memcpy(&quad, a##i + g * 4, sizeof(quad));         \
    const __m512i ai = _mm512_set1_epi32(quad);                  \
    c##i##0 = _mm512_dpbusd_epi32(c##i##0, ai, b0);              \
    c##i##1 = _mm512_dpbusd_epi32(c##i##1, ai, b1);              \
  }
    EMBER_QLIN_ROWS(EMBER_QLIN_ROW)
    b += 128;
  }
#define EMBER_QLIN_OUT(i) c[i][0] = c##i##0; c[i][1] = c##i##1;
  EMBER_QLIN_ROWS(EMBER_QLIN_OUT)
#undef EMBER_QLIN_OUT
#undef EMBER_QLIN_ROW
#undef EMBER_QLIN_ZERO
#undef EMBER_QLIN_ROWS
}

// One panel's epilogue constants: everything QEpilogue applies per channel.
struct PanelEpilogue {
  __m512i corr[2];  // zshift · Σ_k W[n][k]
  __m512 scale[2];  // scale[n] · scale_mul
  __m512 offset[2];
  __mmask16 mask[2];
};

EMBER_QLIN_TARGET PanelEpilogue panel_epilogue(const QLinearWeights& w, const QEpilogue& e,
                                               int32_t zshift, int64_t n0) {
  PanelEpilogue p;
  const int64_t cols = w.n - n0 < kPanel ? w.n - n0 : kPanel;
  const __m512i zs = _mm512_set1_epi32(zshift);
  const __m512 mul = _mm512_set1_ps(e.scale_mul);
  for (int h = 0; h < 2; ++h) {
    const int64_t valid = cols - 16 * h;
    p.mask[h] = valid >= 16 ? __mmask16(0xffff)
                : valid > 0  ? __mmask16((1u << valid) - 1u)
                             : __mmask16(0);
    const __m512i sums = _mm512_maskz_loadu_epi32(p.mask[h], w.col_sums + n0 + 16 * h);
    p.corr[h] = _mm512_mullo_epi32(sums, zs);
    // The product in float32, as the scalar epilogue forms it.
    p.scale[h] = _mm512_mul_ps(_mm512_maskz_loadu_ps(p.mask[h], e.scale + n0 + 16 * h), mul);
    p.offset[h] = e.offset != nullptr ? _mm512_maskz_loadu_ps(p.mask[h], e.offset + n0 + 16 * h)
                                      : _mm512_setzero_ps();
  }
  return p;
}

// Explicit rounding forms: GCC would contract a plain mul and add into an
// FMA (AVX-512F implies FMA), which rounds once instead of twice and would
// differ from the other kinds' epilogue in the last bit.
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

EMBER_QLIN_TARGET void store_float(const __m512i (&c)[8][2], const PanelEpilogue& p, int rows,
                                   float* out, int64_t ldc) {
  for (int i = 0; i < rows; ++i) {
    for (int h = 0; h < 2; ++h) {
      __m512 v = _mm512_cvtepi32_ps(_mm512_add_epi32(c[i][h], p.corr[h]));
      v = _mm512_add_round_ps(_mm512_mul_round_ps(v, p.scale[h], kRound), p.offset[h], kRound);
      _mm512_mask_storeu_ps(out + i * ldc + 16 * h, p.mask[h], v);
    }
  }
}

EMBER_QLIN_TARGET void store_int8(const __m512i (&c)[8][2], const PanelEpilogue& p, int rows,
                                  const QEpilogue& e, int8_t* out, int64_t ldc) {
  // CVTPS2DQ rounds half to even, as requantize's magic-number rounding does,
  // once the value is clamped.
  const __m512 lo = _mm512_set1_ps(static_cast<float>(e.lo - e.zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(e.hi - e.zp));
  const __m512i zp = _mm512_set1_epi32(e.zp);
  for (int i = 0; i < rows; ++i) {
    for (int h = 0; h < 2; ++h) {
      __m512 v = _mm512_cvtepi32_ps(_mm512_add_epi32(c[i][h], p.corr[h]));
      v = _mm512_add_round_ps(_mm512_mul_round_ps(v, p.scale[h], kRound), p.offset[h], kRound);
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), zp);
      _mm_mask_storeu_epi8(out + i * ldc + 16 * h, p.mask[h], _mm512_cvtepi32_epi8(q));
    }
  }
}

EMBER_QLIN_TARGET void quantize_row(const float* x, int64_t k, float inv, int32_t zp,
                                   uint8_t* d) {
  // requantize()'s steps: NaN to 0, clamp, round half to even (CVTPS2DQ in
  // the default rounding mode), plus the zero point; then + 128.
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(-128 - zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(127 - zp));
  const __m512i shift = _mm512_set1_epi32(zp + 128);
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 m = k - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (k - i)) - 1u);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vinv);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), shift);
    _mm_mask_storeu_epi8(d + i, m, _mm512_cvtepi32_epi8(q));
  }
}

template <int R>
EMBER_QLIN_TARGET void tile(int64_t kg, const uint8_t* a, int64_t lda, const int8_t* b,
                            const PanelEpilogue& p, const QEpilogue& e, int64_t t0, int64_t n0,
                            int64_t ldc) {
  __m512i c[8][2];
  dot_rows<R>(kg, a, lda, b, c);
  if (e.float_out) {
    store_float(c, p, R, static_cast<float*>(e.c) + t0 * ldc + n0, ldc);
  } else {
    store_int8(c, p, R, e, static_cast<int8_t*>(e.c) + t0 * ldc + n0, ldc);
  }
}

using TileFn = void (*)(int64_t, const uint8_t*, int64_t, const int8_t*, const PanelEpilogue&,
                        const QEpilogue&, int64_t, int64_t, int64_t);
constexpr TileFn kTiles[kTile + 1] = {nullptr,  tile<1>, tile<2>, tile<3>, tile<4>,
                                      tile<5>, tile<6>, tile<7>, tile<8>};

}  // namespace

void qlinear_quantize_rows(const float* x, int64_t tokens, int64_t k, float inv, int32_t zp,
                           uint8_t* dst, bool amx) {
  const int64_t kp = padded_k(k, amx);
  for (int64_t t = 0; t < tokens; ++t) {
    uint8_t* d = dst + t * kp;
    quantize_row(x + t * k, k, inv, zp, d);
    for (int64_t i = k; i < kp; ++i) d[i] = 0x80u;  // Meets zero weights only.
  }
  pad_rows(tokens, kp, amx, dst);
}

namespace {

// The int32 sums of 32 tokens × one 32-channel panel over `chunks` of 64 k,
// into acc (32 rows of 32): tiles 0–3 accumulate (tokens 0–15 / 16–31 ×
// channels 0–15 / 16–31), 4–5 hold the tokens' bytes, 6–7 the panel's.
// TDPBUSD multiplies the unsigned activations by the signed weights, as
// VPDPBUSD does. Needs the AmxTiles configuration on this thread.
EMBER_TARGET_AMX void amx_sums(int64_t chunks, const uint8_t* a, int64_t lda, const int8_t* b,
                              int32_t* acc) {
  portable::amx_block_32x32<portable::AmxProduct::kU8S8>(
      chunks, [a](int64_t i) { return a + i * kAmxDepth; }, lda, 16 * lda,
      [b](int64_t i) { return b + i * 16 * 128; }, 128, acc, 128, false);
}

// The epilogue of `rows` tokens of an AMX step, 8 at a time through the VNNI
// tiles' stores (the same arithmetic, so the same bits).
EMBER_QLIN_TARGET void amx_store(const int32_t* acc, const PanelEpilogue& p, int rows,
                                 const QEpilogue& e, int64_t t0, int64_t n0, int64_t ldc) {
  for (int r = 0; r < rows; r += kTile) {
    __m512i c[8][2];
    for (int i = 0; i < kTile; ++i) {
      c[i][0] = _mm512_load_si512(acc + (r + i) * 32);
      c[i][1] = _mm512_load_si512(acc + (r + i) * 32 + 16);
    }
    const int n = rows - r < kTile ? rows - r : kTile;
    if (e.float_out) {
      store_float(c, p, n, static_cast<float*>(e.c) + (t0 + r) * ldc + n0, ldc);
    } else {
      store_int8(c, p, n, e, static_cast<int8_t*>(e.c) + (t0 + r) * ldc + n0, ldc);
    }
  }
}

void run_amx(KernelContext& ctx, const QLinearWeights& w, const uint8_t* xu, int64_t tokens,
             int32_t zx, const QEpilogue& e) {
  const int64_t panels = (w.n + kPanel - 1) / kPanel, kg = w.kp / 4;
  const int32_t zshift = -(128 + zx);
  int64_t block = kRowsBlockBytes / (w.kp > 0 ? w.kp : 1) / kAmxTokens * kAmxTokens;
  if (block < kAmxTokens) block = kAmxTokens;
  auto panel_block = [&](int64_t pn, int64_t b0, int64_t b1) {
    const portable::AmxTiles tiles(true);
    const PanelEpilogue pe = panel_epilogue(w, e, zshift, pn * kPanel);
    const int8_t* b = w.data + pn * kg * kPanel * 4;
    alignas(64) int32_t acc[kAmxTokens * kPanel];
    for (int64_t t0 = b0; t0 < b1; t0 += kAmxTokens) {
      const int rows = static_cast<int>(b1 - t0 < kAmxTokens ? b1 - t0 : kAmxTokens);
      amx_sums(w.kp / kAmxDepth, xu + t0 * w.kp, w.kp, b, acc);
      amx_store(acc, pe, rows, e, t0, pn * kPanel, w.n);
    }
  };
  qlinear_for_each_block(ctx, panels, tokens, kAmxTokens, block, panel_block);
}

}  // namespace


void qlinear_run(KernelContext& ctx, const QLinearWeights& w, const uint8_t* xu, int64_t tokens,
                 int32_t zx, const QEpilogue& e) {
  if (tokens <= 0 || w.n <= 0) return;
  // Fewer than 16 tokens would leave most of an AMX tile empty.
  if (w.amx && tokens >= 16) {
    run_amx(ctx, w, xu, tokens, zx, e);
    return;
  }
  const int64_t panels = (w.n + kPanel - 1) / kPanel, kg = w.kp / 4;
  const int32_t zshift = -(128 + zx);
  int64_t block = kRowsBlockBytes / (w.kp > 0 ? w.kp : 1) / kTile * kTile;
  if (block < kTile) block = kTile;
  // Panel pn over tokens [b0, b1): its epilogue constants once, then the tiles.
  auto panel_block = [&](int64_t pn, int64_t b0, int64_t b1) {
    const PanelEpilogue pe = panel_epilogue(w, e, zshift, pn * kPanel);
    const int8_t* b = w.data + pn * kg * kPanel * 4;
    for (int64_t t0 = b0; t0 < b1; t0 += kTile) {
      const int rows = static_cast<int>(b1 - t0 < kTile ? b1 - t0 : kTile);
      kTiles[rows](kg, xu + t0 * w.kp, w.kp, b, pe, e, t0, pn * kPanel, w.n);
    }
  };
  qlinear_for_each_block(ctx, panels, tokens, kTile, block, panel_block);
}

#else

void qlinear_quantize_rows(const float*, int64_t, int64_t, float, int32_t, uint8_t*, bool) {}
void qlinear_run(KernelContext&, const QLinearWeights&, const uint8_t*, int64_t, int32_t,
                 const QEpilogue&) {}

#endif

}  // namespace ember::kernels::quantized
