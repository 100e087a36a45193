#include "kernels/quantized/util/qdepthwise_blocked.h"

#include <cstring>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 conversion, min and max intrinsics start from
// _mm512_undefined_ps(), which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ember::kernels::quantized {
namespace {

constexpr int64_t kBlock = 16;      // Channels per vector.
constexpr int64_t kMaxTaps = 64;    // Keeps every sum below 2^24 (exact in float32).
constexpr int64_t kMaxGrid = 4096;  // Padded pixels: a 256 KiB grid.
// Output pixels of the planes it takes (measured on MobileNetV2's layers,
// docs/quantization.md): the grid's loads bound this form, so the plane
// path, whose vectors are full of outputs on stride-1 planes, is faster on
// those but the smallest.
constexpr int64_t kMaxOutputs = 256;
constexpr int64_t kMaxOutputsStride1 = 64;
constexpr int kPixels = 8;          // Output pixels in flight (FMA latency × throughput).

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int64_t grid_h(const QDepthwiseGeometry& g) { return g.ih + g.ph + g.pb; }
int64_t grid_w(const QDepthwiseGeometry& g) { return g.iw + g.pw + g.pr; }

// The grid, and room past it for rows_3wide's reads beyond a row's end.
size_t grid_bytes(const QDepthwiseGeometry& g) {
  return static_cast<size_t>(round_up((grid_h(g) * grid_w(g) + 2 * kPixels + 3) * kBlock * 4, 64));
}

}  // namespace

bool qdepthwise_blocked_applies(const QDepthwiseGeometry& g, int64_t channels) {
#if EMBER_ISA_X86
  const int64_t pixels = grid_h(g) * grid_w(g);
  return portable::cpu_isa() >= portable::Isa::kAvx2 && channels >= kBlock &&
         g.kh * g.kw <= kMaxTaps && pixels >= 1 && pixels <= kMaxGrid &&
         g.oh * g.ow <= (g.sh > 1 || g.sw > 1 ? kMaxOutputs : kMaxOutputsStride1);
#else
  (void)g;
  (void)channels;
  return false;
#endif
}

size_t qdepthwise_blocked_weights_bytes(int64_t channels, int64_t taps) {
  return static_cast<size_t>(channels / kBlock * taps * kBlock) * sizeof(float);
}

const float* qdepthwise_blocked_weights(const int8_t* w, int64_t channels, int64_t taps,
                                        void* memory) {
  auto* d = static_cast<float*>(memory);
  for (int64_t b = 0; b < channels / kBlock; ++b) {
    for (int64_t t = 0; t < taps; ++t) {
      for (int64_t j = 0; j < kBlock; ++j) {
        d[(b * taps + t) * kBlock + j] = static_cast<float>(w[(b * kBlock + j) * taps + t]);
      }
    }
  }
  return d;
}

size_t qdepthwise_blocked_scratch_bytes(const QDepthwiseGeometry& g) {
  return grid_bytes(g) + static_cast<size_t>(round_up(g.oh * g.ow, kBlock) * kBlock);
}

#if EMBER_ISA_X86
namespace {

// out[c] = column c of the 16 rows in[r]: four rounds of unpacks, each
// doubling the run of one row's bytes that stays together (1, 2, 4, 8).
inline void transpose16(const __m128i (&in)[16], __m128i (&out)[16]) {
  __m128i a[16], b[16];
  for (int i = 0; i < 8; ++i) {  // Rows 2i, 2i+1: columns 0–7, then 8–15.
    a[2 * i] = _mm_unpacklo_epi8(in[2 * i], in[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi8(in[2 * i], in[2 * i + 1]);
  }
  for (int j = 0; j < 4; ++j) {  // Rows 4j..4j+3: columns 0–3, 4–7, 8–11, 12–15.
    b[4 * j] = _mm_unpacklo_epi16(a[4 * j], a[4 * j + 2]);
    b[4 * j + 1] = _mm_unpackhi_epi16(a[4 * j], a[4 * j + 2]);
    b[4 * j + 2] = _mm_unpacklo_epi16(a[4 * j + 1], a[4 * j + 3]);
    b[4 * j + 3] = _mm_unpackhi_epi16(a[4 * j + 1], a[4 * j + 3]);
  }
  for (int j = 0; j < 2; ++j) {  // Rows 8j..8j+7: column pairs 2m, 2m+1.
    for (int q = 0; q < 4; ++q) {
      a[8 * j + 2 * q] = _mm_unpacklo_epi32(b[8 * j + q], b[8 * j + 4 + q]);
      a[8 * j + 2 * q + 1] = _mm_unpackhi_epi32(b[8 * j + q], b[8 * j + 4 + q]);
    }
  }
  for (int m = 0; m < 8; ++m) {  // All 16 rows of columns 2m and 2m + 1.
    out[2 * m] = _mm_unpacklo_epi64(a[m], a[8 + m]);
    out[2 * m + 1] = _mm_unpackhi_epi64(a[m], a[8 + m]);
  }
}

#define EMBER_QDWB_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

// The grid's padding: rows above and below the image, the columns left and
// right of it, and the slack past it (the image's pixels are all written by
// the transpose).
inline void zero_pixels(float* grid, int64_t from, int64_t count) {
  if (count > 0) std::memset(grid + from * kBlock, 0, static_cast<size_t>(count * kBlock) * sizeof(float));
}

void zero_border(const QDepthwiseGeometry& g, float* grid) {
  const int64_t wp = grid_w(g);
  zero_pixels(grid, 0, g.ph * wp);
  for (int64_t y = 0; y < g.ih; ++y) {
    zero_pixels(grid, (y + g.ph) * wp, g.pw);
    zero_pixels(grid, (y + g.ph) * wp + g.pw + g.iw, g.pr);
  }
  zero_pixels(grid, (g.ph + g.ih) * wp, g.pb * wp + 2 * kPixels + 3);  // And the slack.
}

// Input planes → grid pixels of x − zx, 16 pixels at a time (the last ones
// through masked loads: nothing past the 16th plane's end is read).
EMBER_QDWB_TARGET void fill_grid(const QDepthwiseGeometry& g, const int8_t* x, int32_t zx,
                                 float* grid) {
  const int64_t pixels = g.ih * g.iw, wp = grid_w(g);
  const __m512 vzx = _mm512_set1_ps(static_cast<float>(zx));
  int64_t y = 0, col = 0;  // Of pixel p0.
  for (int64_t p0 = 0; p0 < pixels; p0 += kBlock) {
    const int64_t m = pixels - p0 < kBlock ? pixels - p0 : kBlock;
    const auto mask = static_cast<__mmask16>(m == kBlock ? 0xffffu : (1u << m) - 1u);
    __m128i rows[16], px[16];
    for (int c = 0; c < 16; ++c) rows[c] = _mm_maskz_loadu_epi8(mask, x + c * pixels + p0);
    transpose16(rows, px);
    for (int64_t k = 0; k < m; ++k) {
      const __m512 v = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(px[k])), vzx);
      _mm512_storeu_ps(grid + ((y + g.ph) * wp + col + g.pw) * kBlock, v);
      if (++col == g.iw) {
        col = 0;
        ++y;
      }
    }
  }
}

// Requantises one pixel's 16 channels (requant16_avx512's float operations:
// explicit rounding forms, as GCC would contract a plain mul and add).
EMBER_QDWB_TARGET inline __m128i requant16(__m512 acc, __m512 s, __m512 o, __m512 lo, __m512 hi,
                                           __m512i zy) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  __m512 v = _mm512_add_round_ps(_mm512_mul_round_ps(acc, s, kRound), o, kRound);
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), zy));
}

// Each tap's offset (floats) from its pixel's window start in the grid.
void tap_offsets(const QDepthwiseGeometry& g, int64_t* off) {
  const int64_t wp = grid_w(g);
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    for (int64_t kx = 0; kx < g.kw; ++kx) off[ky * g.kw + kx] = (ky * g.dh * wp + kx * g.dw) * kBlock;
  }
}

// Where the next m output pixels' windows start in the grid (from output
// (*oy, *ox), which advances past them); the group's remaining `count − m`
// entries repeat the last one (computed, never stored).
void window_starts(const QDepthwiseGeometry& g, const float* grid, int64_t m, int count,
                   int64_t* oy, int64_t* ox, const float** src) {
  const int64_t wp = grid_w(g);
  for (int j = 0; j < count; ++j) {
    if (j < m) {
      src[j] = grid + (*oy * g.sh * wp + *ox * g.sw) * kBlock;
      if (++*ox == g.ow) {
        *ox = 0;
        ++*oy;
      }
    } else {
      src[j] = src[m - 1];
    }
  }
}

// Pixels (16 channels each) → the 16 output planes, 16 pixels at a time; the
// last, partial group through a buffer, so no byte past a plane is written.
void planes_out(const int8_t* pixels_out, int64_t outputs, int8_t* out) {
  for (int64_t n0 = 0; n0 < outputs; n0 += kBlock) {
    const int64_t m = outputs - n0 < kBlock ? outputs - n0 : kBlock;
    __m128i rows[16], planes[16];
    for (int k = 0; k < 16; ++k) {
      rows[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pixels_out + (n0 + k) * kBlock));
    }
    transpose16(rows, planes);
    for (int c = 0; c < 16; ++c) {
      int8_t* dst = out + c * outputs + n0;
      if (m == kBlock) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), planes[c]);
      } else {
        alignas(16) int8_t tail[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tail), planes[c]);
        std::memcpy(dst, tail, static_cast<size_t>(m));
      }
    }
  }
}

// A 3-wide kernel (dw 1) at column stride S, 8 output pixels of one row at a
// time: each kernel row's 7·S + 3 grid pixels are loaded once and serve its
// three column taps (8·3 FMAs from 7·S + 3 loads, against 24 loads in the
// general loop, which is bound by the L1 cache's load rate). A row's last
// segment computes past the row's end (the grid's slack keeps the reads
// inside the scratch) and stores only its pixels.
template <int S>
EMBER_QDWB_TARGET void rows_3wide(const QDepthwiseGeometry& g, const float* w, const float* grid,
                                  __m512 s, __m512 o, __m512 lo, __m512 hi, __m512i zy,
                                  int8_t* pixels_out) {
  constexpr int kLoads = (kPixels - 1) * S + 3;
  const int64_t wp = grid_w(g);
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    for (int64_t ox0 = 0; ox0 < g.ow; ox0 += kPixels) {
      const int64_t m = g.ow - ox0 < kPixels ? g.ow - ox0 : kPixels;
      __m512 acc[kPixels];
#pragma GCC unroll 8
      for (int j = 0; j < kPixels; ++j) acc[j] = _mm512_setzero_ps();
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const float* row = grid + ((oy * g.sh + ky * g.dh) * wp + ox0 * S) * kBlock;
        __m512 v[kLoads];
#pragma GCC unroll 32
        for (int i = 0; i < kLoads; ++i) v[i] = _mm512_loadu_ps(row + i * kBlock);
#pragma GCC unroll 3
        for (int kx = 0; kx < 3; ++kx) {
          const __m512 wt = _mm512_loadu_ps(w + (ky * 3 + kx) * kBlock);
#pragma GCC unroll 8
          for (int j = 0; j < kPixels; ++j) acc[j] = _mm512_fmadd_ps(v[j * S + kx], wt, acc[j]);
        }
      }
      int8_t* dst = pixels_out + (oy * g.ow + ox0) * kBlock;
      for (int64_t j = 0; j < m; ++j) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j * kBlock),
                         requant16(acc[j], s, o, lo, hi, zy));
      }
    }
  }
}

// Any kernel: 8 output pixels at a time, each tap's 8 loads from the
// pixels' windows.
EMBER_QDWB_TARGET void pixels_any(const QDepthwiseGeometry& g, const float* w, const float* grid,
                                  __m512 s, __m512 o, __m512 lo, __m512 hi, __m512i zy,
                                  int8_t* pixels_out) {
  const int64_t taps = g.kh * g.kw, outputs = g.oh * g.ow;
  int64_t tap_off[kMaxTaps];
  tap_offsets(g, tap_off);
  int64_t oy = 0, ox = 0;  // Of output n0.
  for (int64_t n0 = 0; n0 < outputs; n0 += kPixels) {
    const int64_t m = outputs - n0 < kPixels ? outputs - n0 : kPixels;
    // Where each pixel's window starts in the grid; the group's missing
    // pixels repeat the last one (computed, never stored).
    const float* src[kPixels];
    window_starts(g, grid, m, kPixels, &oy, &ox, src);
    __m512 acc[kPixels];
#pragma GCC unroll 8
    for (int j = 0; j < kPixels; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t t = 0; t < taps; ++t) {
      const __m512 wt = _mm512_loadu_ps(w + t * kBlock);
      const int64_t off = tap_off[t];
#pragma GCC unroll 8
      for (int j = 0; j < kPixels; ++j) {
        acc[j] = _mm512_fmadd_ps(_mm512_loadu_ps(src[j] + off), wt, acc[j]);
      }
    }
    for (int64_t j = 0; j < m; ++j) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(pixels_out + (n0 + j) * kBlock),
                      requant16(acc[j], s, o, lo, hi, zy));
    }
  }
}

EMBER_QDWB_TARGET void block16(const QDepthwiseGeometry& g, const float* w, const int8_t* x,
                               int32_t zx, const float* scale, const float* offset, float lo,
                               float hi, int32_t zy, int8_t* out, void* scratch) {
  auto* grid = static_cast<float*>(scratch);
  auto* pixels_out = static_cast<int8_t*>(scratch) + grid_bytes(g);
  zero_border(g, grid);
  fill_grid(g, x, zx, grid);

  const int64_t outputs = g.oh * g.ow;
  const __m512 s = _mm512_loadu_ps(scale);
  const __m512 o = offset != nullptr ? _mm512_loadu_ps(offset) : _mm512_setzero_ps();
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const __m512i vzy = _mm512_set1_epi32(zy);
  if (g.kw == 3 && g.dw == 1 && g.sw == 1) {
    rows_3wide<1>(g, w, grid, s, o, vlo, vhi, vzy, pixels_out);
  } else if (g.kw == 3 && g.dw == 1 && g.sw == 2) {
    rows_3wide<2>(g, w, grid, s, o, vlo, vhi, vzy, pixels_out);
  } else {
    pixels_any(g, w, grid, s, o, vlo, vhi, vzy, pixels_out);
  }
  planes_out(pixels_out, outputs, out);
}

// The AVX2 form: the same grid and sums, each pixel's 16 channels as two
// halves of 8 (ymm), a half at a time so that 4 outputs' accumulators and a
// kernel row's loads fit AVX2's 16 registers; tails without byte masks go
// through 16-byte buffers.
#define EMBER_QDWB_AVX2 __attribute__((target("avx2,fma")))

EMBER_QDWB_AVX2 void fill_grid_avx2(const QDepthwiseGeometry& g, const int8_t* x, int32_t zx,
                                    float* grid) {
  const int64_t pixels = g.ih * g.iw, wp = grid_w(g);
  const __m256 vzx = _mm256_set1_ps(static_cast<float>(zx));
  int64_t y = 0, col = 0;  // Of pixel p0.
  for (int64_t p0 = 0; p0 < pixels; p0 += kBlock) {
    const int64_t m = pixels - p0 < kBlock ? pixels - p0 : kBlock;
    __m128i rows[16], px[16];
    for (int c = 0; c < 16; ++c) {
      if (m == kBlock) {
        rows[c] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + c * pixels + p0));
      } else {
        alignas(16) int8_t tail[16] = {};
        std::memcpy(tail, x + c * pixels + p0, static_cast<size_t>(m));
        rows[c] = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
      }
    }
    transpose16(rows, px);
    for (int64_t k = 0; k < m; ++k) {
      float* dst = grid + ((y + g.ph) * wp + col + g.pw) * kBlock;
      _mm256_storeu_ps(dst, _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(px[k])), vzx));
      _mm256_storeu_ps(dst + 8, _mm256_sub_ps(
          _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(px[k], 8))), vzx));
      if (++col == g.iw) {
        col = 0;
        ++y;
      }
    }
  }
}

// 8 channels of one pixel requantised (requant16's operations) into 8 bytes.
EMBER_QDWB_AVX2 inline void store8(__m256 acc, __m256 s, __m256 o, __m256 lo, __m256 hi,
                                   __m256i zy, int8_t* dst) {
  __m256 v = _mm256_add_ps(_mm256_mul_ps(acc, s), o);  // ISO C++: not contracted.
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), zy);
  // In [−128, 127] already: the saturating packs only narrow.
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_packs_epi16(w, w));
}

constexpr int kPixelsAvx2 = 4;

// rows_3wide's AVX2 counterpart, 4 outputs of a row per segment.
template <int S>
EMBER_QDWB_AVX2 void rows_3wide_avx2(const QDepthwiseGeometry& g, const float* w,
                                     const float* grid, const float* scale, const float* offset,
                                     float lo, float hi, int32_t zy, int8_t* pixels_out) {
  constexpr int kLoads = (kPixelsAvx2 - 1) * S + 3;
  const int64_t wp = grid_w(g);
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const __m256i vzy = _mm256_set1_epi32(zy);
  for (int h = 0; h < 2; ++h) {
    const __m256 s = _mm256_loadu_ps(scale + 8 * h);
    const __m256 o = offset != nullptr ? _mm256_loadu_ps(offset + 8 * h) : _mm256_setzero_ps();
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox0 = 0; ox0 < g.ow; ox0 += kPixelsAvx2) {
        const int64_t m = g.ow - ox0 < kPixelsAvx2 ? g.ow - ox0 : kPixelsAvx2;
        __m256 acc[kPixelsAvx2];
#pragma GCC unroll 4
        for (int j = 0; j < kPixelsAvx2; ++j) acc[j] = _mm256_setzero_ps();
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          const float* row = grid + ((oy * g.sh + ky * g.dh) * wp + ox0 * S) * kBlock + 8 * h;
          __m256 v[kLoads];
#pragma GCC unroll 16
          for (int i = 0; i < kLoads; ++i) v[i] = _mm256_loadu_ps(row + i * kBlock);
#pragma GCC unroll 3
          for (int kx = 0; kx < 3; ++kx) {
            const __m256 wt = _mm256_loadu_ps(w + (ky * 3 + kx) * kBlock + 8 * h);
#pragma GCC unroll 4
            for (int j = 0; j < kPixelsAvx2; ++j) {
              acc[j] = _mm256_fmadd_ps(v[j * S + kx], wt, acc[j]);
            }
          }
        }
        int8_t* dst = pixels_out + (oy * g.ow + ox0) * kBlock + 8 * h;
        for (int64_t j = 0; j < m; ++j) store8(acc[j], s, o, vlo, vhi, vzy, dst + j * kBlock);
      }
    }
  }
}

// pixels_any's AVX2 counterpart.
EMBER_QDWB_AVX2 void pixels_any_avx2(const QDepthwiseGeometry& g, const float* w,
                                     const float* grid, const float* scale, const float* offset,
                                     float lo, float hi, int32_t zy, int8_t* pixels_out) {
  const int64_t taps = g.kh * g.kw, outputs = g.oh * g.ow;
  int64_t tap_off[kMaxTaps];
  tap_offsets(g, tap_off);
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const __m256i vzy = _mm256_set1_epi32(zy);
  for (int h = 0; h < 2; ++h) {
    const __m256 s = _mm256_loadu_ps(scale + 8 * h);
    const __m256 o = offset != nullptr ? _mm256_loadu_ps(offset + 8 * h) : _mm256_setzero_ps();
    int64_t oy = 0, ox = 0;  // Of output n0.
    for (int64_t n0 = 0; n0 < outputs; n0 += kPixelsAvx2) {
      const int64_t m = outputs - n0 < kPixelsAvx2 ? outputs - n0 : kPixelsAvx2;
      const float* src[kPixelsAvx2];
      window_starts(g, grid + 8 * h, m, kPixelsAvx2, &oy, &ox, src);
      __m256 acc[kPixelsAvx2];
#pragma GCC unroll 4
      for (int j = 0; j < kPixelsAvx2; ++j) acc[j] = _mm256_setzero_ps();
      for (int64_t t = 0; t < taps; ++t) {
        const __m256 wt = _mm256_loadu_ps(w + t * kBlock + 8 * h);
#pragma GCC unroll 4
        for (int j = 0; j < kPixelsAvx2; ++j) {
          acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(src[j] + tap_off[t]), wt, acc[j]);
        }
      }
      for (int64_t j = 0; j < m; ++j) {
        store8(acc[j], s, o, vlo, vhi, vzy, pixels_out + (n0 + j) * kBlock + 8 * h);
      }
    }
  }
}

EMBER_QDWB_AVX2 void block16_avx2(const QDepthwiseGeometry& g, const float* w, const int8_t* x,
                                  int32_t zx, const float* scale, const float* offset, float lo,
                                  float hi, int32_t zy, int8_t* out, void* scratch) {
  auto* grid = static_cast<float*>(scratch);
  auto* pixels_out = static_cast<int8_t*>(scratch) + grid_bytes(g);
  zero_border(g, grid);
  fill_grid_avx2(g, x, zx, grid);
  if (g.kw == 3 && g.dw == 1 && g.sw == 1) {
    rows_3wide_avx2<1>(g, w, grid, scale, offset, lo, hi, zy, pixels_out);
  } else if (g.kw == 3 && g.dw == 1 && g.sw == 2) {
    rows_3wide_avx2<2>(g, w, grid, scale, offset, lo, hi, zy, pixels_out);
  } else {
    pixels_any_avx2(g, w, grid, scale, offset, lo, hi, zy, pixels_out);
  }
  planes_out(pixels_out, g.oh * g.ow, out);
}

}  // namespace

void qdepthwise_block16(const QDepthwiseGeometry& g, const float* w, const int8_t* x, int32_t zx,
                        const float* scale, const float* offset, float lo, float hi, int32_t zy,
                        int8_t* out, void* scratch) {
  if (portable::cpu_isa() >= portable::Isa::kAvx512) {
    block16(g, w, x, zx, scale, offset, lo, hi, zy, out, scratch);
  } else {
    block16_avx2(g, w, x, zx, scale, offset, lo, hi, zy, out, scratch);
  }
}

void qdepthwise_transpose16(const int8_t* rows, int8_t* out) {
  __m128i in[16], t[16];
  for (int r = 0; r < 16; ++r) in[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows + 16 * r));
  transpose16(in, t);
  for (int c = 0; c < 16; ++c) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * c), t[c]);
}

#else

void qdepthwise_block16(const QDepthwiseGeometry&, const float*, const int8_t*, int32_t,
                        const float*, const float*, float, float, int32_t, int8_t*, void*) {}

void qdepthwise_transpose16(const int8_t* rows, int8_t* out) {
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) out[16 * c + r] = rows[16 * r + c];
  }
}

#endif

}  // namespace ember::kernels::quantized
