#include "kernels/quantized/util/qdyn_intx.h"

#include <cfloat>
#include <cmath>
#include <algorithm>
#include <cstring>

#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 conversion intrinsics start from _mm512_undefined_*(),
// which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ember::kernels::quantized {
namespace {

constexpr int64_t kChunk = 64;
constexpr int64_t kTileCols = 16;  // columns per tile of the VNNI layout
constexpr int64_t kBlock = 32;     // k per block of the VNNI layout
constexpr int64_t kMaxTiledBlocks = 1024;  // the tiled kernel's block sums: k up to 32768

size_t round64(size_t b) { return (b + 63) / 64 * 64; }

int64_t scale_stride_of(int64_t k, int64_t group) {
  // Groups of 32 are read in pairs per chunk of 64: padded to whole chunks.
  const int64_t kp = (k + kChunk - 1) / kChunk * kChunk;
  return group == 32 ? kp / 32 : k / group;
}

// Rows of the activation tile the kernels keep in registers.
constexpr int64_t kRowTile = 4;
// Output columns per block: their packed weights stay in cache while every
// row tile passes over them.
constexpr int64_t kColBlock = 16;

// The plain loops: exact int32 per group, any group size.
void rows_baseline(const IntxWeights& w, const uint8_t* u, const float* sx, const int32_t* zx,
                   int64_t rows, int64_t first, int64_t last, float* y, int64_t ldy) {
  const int64_t groups = w.k / w.group;
  for (int64_t c = first; c < last; ++c) {
    const float* s = w.scales + c * w.scale_stride;
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* ur = u + r * w.kp;
      const int32_t shift = 128 + zx[r];
      float acc = 0.0f;
      for (int64_t g = 0; g < groups; ++g) {
        int32_t d = 0;
        for (int64_t i = g * w.group; i < (g + 1) * w.group; ++i) {
          d += (static_cast<int32_t>(ur[i]) - shift) * intx_weight_at(w, c, i);
        }
        acc += s[g] * static_cast<float>(d);
      }
      const float v = sx[r] * acc;
      y[r * ldy + c] = w.bias != nullptr ? v + w.bias[c] : v;
    }
  }
}

#if EMBER_ISA_X86

#define EMBER_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni,avx2,fma")))

// AVX2: one 256-bit vector of 32 weights at a time (int4: a chunk's low
// nibbles are its first 32 weights, the high nibbles the next 32).
template <int kBits>
EMBER_TARGET_AVX2_FMA inline void load_w_avx2(const uint8_t* p, __m256i* lo, __m256i* hi) {
  if constexpr (kBits == 8) {
    *lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    *hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  } else {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i m = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
    *lo = _mm256_sub_epi8(_mm256_and_si256(b, m), eight);
    *hi = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(b, 4), m), eight);
  }
}

// Σ over 32 k of u·w into 8 int32 lanes. int4: VPMADDUBSW's int16 pair sums
// are at most 2·255·8 and cannot saturate; int8 could (2·255·128), so those
// widen to int16 and use VPMADDWD.
template <int kBits>
EMBER_TARGET_AVX2_FMA inline __m256i dot32_avx2(__m256i x, __m256i wv) {
  if constexpr (kBits == 4) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, wv), _mm256_set1_epi16(1));
  } else {
    const __m256i x0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(x));
    const __m256i x1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(x, 1));
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(wv));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(wv, 1));
    return _mm256_add_epi32(_mm256_madd_epi16(x0, w0), _mm256_madd_epi16(x1, w1));
  }
}

EMBER_TARGET_AVX2_FMA inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int kBits, bool kG32, int R>
EMBER_TARGET_AVX2_FMA void column_avx2(const IntxWeights& w, const uint8_t* u, int64_t c,
                                       float (&out)[R]) {
  const uint8_t* wr = w.w + c * w.row_bytes();
  const float* s = w.scales + c * w.scale_stride;
  const int64_t chunks = w.kp / kChunk;
  constexpr int64_t kStep = kBits == 4 ? 32 : 64;
  __m256 acc[R][2];
  #pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  if constexpr (kG32) {
    for (int64_t ch = 0; ch < chunks; ++ch) {
      __m256i lo, hi;
      load_w_avx2<kBits>(wr + ch * kStep, &lo, &hi);
      const __m256 s0 = _mm256_set1_ps(s[2 * ch]), s1 = _mm256_set1_ps(s[2 * ch + 1]);
      #pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const uint8_t* ur = u + r * w.kp + ch * kChunk;
        const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ur));
        const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ur + 32));
        acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot32_avx2<kBits>(x0, lo)), s0,
                                    acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot32_avx2<kBits>(x1, hi)), s1,
                                    acc[r][1]);
      }
    }
  } else {
    const int64_t per_group = w.group / kChunk;
    const int64_t groups = w.k / w.group;
    for (int64_t g = 0; g < groups; ++g) {
      __m256i d[R];
      #pragma GCC unroll 4
      for (int r = 0; r < R; ++r) d[r] = _mm256_setzero_si256();
      for (int64_t ch = g * per_group; ch < (g + 1) * per_group; ++ch) {
        __m256i lo, hi;
        load_w_avx2<kBits>(wr + ch * kStep, &lo, &hi);
        #pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const uint8_t* ur = u + r * w.kp + ch * kChunk;
          const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ur));
          const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ur + 32));
          d[r] = _mm256_add_epi32(d[r], _mm256_add_epi32(dot32_avx2<kBits>(x0, lo),
                                                         dot32_avx2<kBits>(x1, hi)));
        }
      }
      const __m256 sv = _mm256_set1_ps(s[g]);
      #pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d[r]), sv, acc[r][0]);
      }
    }
  }
  #pragma GCC unroll 4
  for (int r = 0; r < R; ++r) out[r] = hsum256(_mm256_add_ps(acc[r][0], acc[r][1]));
}

#endif  // EMBER_ISA_X86

template <int R>
inline void finish(const IntxWeights& w, const float* sx, const int32_t* zx, int64_t c,
                   const float (&dot)[R], float* y, int64_t ldy) {
  for (int r = 0; r < R; ++r) {
    const float v = sx[r] * (dot[r] - static_cast<float>(128 + zx[r]) * w.s1[c]);
    y[r * ldy + c] = w.bias != nullptr ? v + w.bias[c] : v;
  }
}

template <int R, typename Column>
void rows_simd(const IntxWeights& w, const uint8_t* u, const float* sx, const int32_t* zx,
               int64_t first, int64_t last, float* y, int64_t ldy, Column column) {
  for (int64_t c = first; c < last; ++c) {
    float dot[R];
    column(u, c, dot);
    finish<R>(w, sx, zx, c, dot, y, ldy);
  }
}


// f.template operator()<R>(r0) for each tile of R <= 4 rows starting at r0.
template <typename F>
void by_row_tiles(int64_t rows, F f) {
  for (int64_t r0 = 0; r0 < rows; r0 += kRowTile) {
    switch (rows - r0 < kRowTile ? rows - r0 : kRowTile) {
      case 1: f.template operator()<1>(r0); break;
      case 2: f.template operator()<2>(r0); break;
      case 3: f.template operator()<3>(r0); break;
      default: f.template operator()<4>(r0); break;
    }
  }
}

template <int kBits, bool kG32>
void rows_kind(const IntxWeights& w, const uint8_t* u, const float* sx, const int32_t* zx,
               int64_t rows, int64_t first, int64_t last, float* y, int64_t ldy) {
  // Column blocks outermost: a block's weights are read from cache by every row tile.
  for (int64_t c0 = first; c0 < last; c0 += kColBlock) {
    const int64_t c1 = c0 + kColBlock < last ? c0 + kColBlock : last;
    by_row_tiles(rows, [&]<int R>(int64_t r0) {
#if EMBER_ISA_X86
      // AVX2 (also on VNNI hosts for weights the tiled layout does not take).
      rows_simd<R>(w, u + r0 * w.kp, sx + r0, zx + r0, c0, c1, y + r0 * ldy, ldy,
                   [&](const uint8_t* uu, int64_t c, float (&d)[R]) {
                     column_avx2<kBits, kG32, R>(w, uu, c, d);
                   });
#endif
    });
  }
}


// The VNNI tile layout (qdyn_intx.h).
IntxWeights pack_tiled(IntxWeights w, const uint8_t* weight, const float* scales, void* mem) {
  const int64_t n = w.n, k = w.k, groups = k / w.group, blocks = k / kBlock;
  const int64_t tiles = (n + kTileCols - 1) / kTileCols;
  const int64_t block_bytes = w.bits == 4 ? 4 * 64 : 8 * 64;
  auto* base = static_cast<uint8_t*>(mem);
  uint8_t* packed = base;
  auto* sc = reinterpret_cast<float*>(
      base + round64(static_cast<size_t>(tiles * blocks * block_bytes)));
  auto* s1 = reinterpret_cast<float*>(
      reinterpret_cast<uint8_t*>(sc) +
      round64(static_cast<size_t>(tiles * kTileCols * groups) * sizeof(float)));
  auto value = [&](int64_t row, int64_t col) -> int {
    if (row >= n) return 0;
    if (w.bits == 8) return static_cast<int8_t>(weight[row * k + col]);
    return ((weight[row * (k / 2) + (col >> 1)] >> ((col & 1) * 4)) & 0x0F) - 8;
  };
  for (int64_t t = 0; t < tiles; ++t) {
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* out = packed + (t * blocks + b) * block_bytes;
      for (int64_t j = 0; j < kTileCols; ++j) {
        for (int64_t q = 0; q < 8; ++q) {
          for (int64_t i = 0; i < 4; ++i) {
            const int v = value(t * kTileCols + j, b * kBlock + 4 * q + i);
            if (w.bits == 8) {
              out[q * 64 + j * 4 + i] = static_cast<uint8_t>(static_cast<int8_t>(v));
            } else if (q % 2 == 0) {
              out[(q / 2) * 64 + j * 4 + i] = static_cast<uint8_t>(v + 8);
            } else {
              uint8_t& o = out[(q / 2) * 64 + j * 4 + i];
              o = static_cast<uint8_t>(o | ((v + 8) << 4));
            }
          }
        }
      }
    }
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t j = 0; j < kTileCols; ++j) {
        const int64_t row = t * kTileCols + j;
        sc[(t * groups + g) * kTileCols + j] = row < n ? scales[row * groups + g] : 0.0f;
      }
    }
    for (int64_t j = 0; j < kTileCols; ++j) {
      const int64_t row = t * kTileCols + j;
      double acc = 0.0;
      for (int64_t g = 0; row < n && g < groups; ++g) {
        int64_t sum = 0;
        for (int64_t i = g * w.group; i < (g + 1) * w.group; ++i) sum += value(row, i);
        acc += static_cast<double>(scales[row * groups + g]) * static_cast<double>(sum);
      }
      s1[row] = static_cast<float>(acc);
    }
  }
  w.w = packed;
  w.scales = sc;
  w.s1 = s1;
  w.scale_stride = groups;
  return w;
}

#if EMBER_ISA_X86
// R rows × one tile of 16 columns: per block of 32 k, 8 VPDPBUSD (one
// broadcast quad of activation bytes each) into 16 int32 column sums per row;
// per group, those sums times the tile's 16 scales into float accumulators.
template <int kBits, int R>
EMBER_TARGET_VNNI void tile_vnni(const IntxWeights& w, const uint8_t* u, const int32_t* usum8,
                                 int64_t t, __m512 (&acc)[R]) {
  const int64_t blocks = w.k / kBlock, per_group = w.group / kBlock, groups = w.k / w.group;
  constexpr int64_t kBlockBytes = kBits == 4 ? 4 * 64 : 8 * 64;
  const uint8_t* wt = w.w + t * blocks * kBlockBytes;
  const float* st = w.scales + t * groups * kTileCols;
  const __m512i low = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    __m512i d[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) d[r] = _mm512_setzero_si512();
    for (int64_t b = g * per_group; b < (g + 1) * per_group; ++b) {
      const uint8_t* wb = wt + b * kBlockBytes;
      __m512i wq[8];
      if constexpr (kBits == 8) {
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q) wq[q] = _mm512_loadu_si512(wb + q * 64);
      } else {
#pragma GCC unroll 4
        for (int m = 0; m < 4; ++m) {
          const __m512i v = _mm512_loadu_si512(wb + m * 64);
          wq[2 * m] = _mm512_and_si512(v, low);
          wq[2 * m + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const uint8_t* ub = u + r * w.kp + b * kBlock;
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q) {
          int32_t quad;
          std::memcpy(&quad, ub + 4 * q, sizeof(quad));
          d[r] = _mm512_dpbusd_epi32(d[r], _mm512_set1_epi32(quad), wq[q]);
        }
        if constexpr (kBits == 4) {
          d[r] = _mm512_sub_epi32(d[r], _mm512_set1_epi32(usum8[r * blocks + b]));
        }
      }
    }
    const __m512 sv = _mm512_loadu_ps(st + g * kTileCols);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d[r]), sv, acc[r]);
  }
}

template <int kBits, int R>
EMBER_TARGET_VNNI void tiles_vnni(const IntxWeights& w, const uint8_t* u, const float* sx,
                                  const int32_t* zx, const int32_t* usum8, int64_t t0,
                                  int64_t t1, float* y, int64_t ldy) {
  for (int64_t t = t0; t < t1; ++t) {
    __m512 acc[R];
    tile_vnni<kBits, R>(w, u, usum8, t, acc);
    const int64_t c0 = t * kTileCols;
    const int64_t cols = std::min<int64_t>(kTileCols, w.n - c0);
    const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1u);
    const __m512 s1 = _mm512_loadu_ps(w.s1 + c0);
    const __m512 bias = w.bias != nullptr ? _mm512_maskz_loadu_ps(mask, w.bias + c0)
                                          : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) {
      const __m512 shift = _mm512_set1_ps(static_cast<float>(128 + zx[r]));
      const __m512 v = _mm512_mul_ps(_mm512_set1_ps(sx[r]),
                                     _mm512_sub_ps(acc[r], _mm512_mul_ps(shift, s1)));
      _mm512_mask_storeu_ps(y + r * ldy + c0, mask, _mm512_add_ps(v, bias));
    }
  }
}

// Σ u per block of 32 times 8, for R rows (the int4 nibbles hold w + 8).
void block_sums8(const uint8_t* u, int64_t kp, int64_t k, int64_t rows, int32_t* out) {
  const int64_t blocks = k / kBlock;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t s = 0;
      for (int64_t i = 0; i < kBlock; ++i) s += u[r * kp + b * kBlock + i];
      out[r * blocks + b] = 8 * s;
    }
  }
}

// Tiles [t0, t1) for every row: column blocks of 4 tiles (their weights stay
// in cache) outermost, then tiles of up to 4 rows.
void rows_tiled(const IntxWeights& w, const uint8_t* u, const float* sx, const int32_t* zx,
                int64_t rows, int64_t t0, int64_t t1, float* y, int64_t ldy) {
  int32_t usum8[kRowTile * kMaxTiledBlocks];
  const int64_t tile_block = rows > kRowTile ? 4 : t1 - t0;
  for (int64_t b0 = t0; b0 < t1; b0 += tile_block) {
    const int64_t b1 = std::min(t1, b0 + tile_block);
    by_row_tiles(rows, [&]<int R>(int64_t r0) {
      const uint8_t* ur = u + r0 * w.kp;
      if (w.bits == 4) {
        block_sums8(ur, w.kp, w.k, R, usum8);
        tiles_vnni<4, R>(w, ur, sx + r0, zx + r0, usum8, b0, b1, y + r0 * ldy, ldy);
      } else {
        tiles_vnni<8, R>(w, ur, sx + r0, zx + r0, usum8, b0, b1, y + r0 * ldy, ldy);
      }
    });
  }
}
#endif  // EMBER_ISA_X86
}  // namespace

size_t intx_packed_bytes(int bits, int64_t n, int64_t k, int64_t group) {
  const int64_t kp = (k + kChunk - 1) / kChunk * kChunk;
  const int64_t row = bits == 4 ? kp / 2 : kp;
  // Room for either layout: the tiled one pads the columns to 16.
  const int64_t np = (n + kTileCols - 1) / kTileCols * kTileCols;
  const int64_t stride = std::max(scale_stride_of(k, group), k / group);
  return round64(static_cast<size_t>(np * row)) +
         round64(static_cast<size_t>(np * stride) * sizeof(float)) +
         round64(static_cast<size_t>(np) * sizeof(float));
}

IntxWeights intx_pack(QGemmKind kind, int bits, const uint8_t* weight, const float* scales,
                      int64_t n, int64_t k, int64_t group, const float* bias, void* mem) {
  IntxWeights w;
  w.kind = kind;
  w.bits = bits;
  w.n = n;
  w.k = k;
  w.kp = (k + kChunk - 1) / kChunk * kChunk;
  w.group = group;
  w.scale_stride = scale_stride_of(k, group);
  w.bias = bias;
  w.tiled = kind == QGemmKind::kAvx512Vnni && group % kBlock == 0 &&
            k / kBlock <= kMaxTiledBlocks;
  if (w.tiled) return pack_tiled(w, weight, scales, mem);
  auto* base = static_cast<uint8_t*>(mem);
  auto* packed = base;
  auto* sc = reinterpret_cast<float*>(base + round64(static_cast<size_t>(n * w.row_bytes())));
  auto* s1 = reinterpret_cast<float*>(
      reinterpret_cast<uint8_t*>(sc) +
      round64(static_cast<size_t>(n * w.scale_stride) * sizeof(float)));
  const int64_t groups = k / group;
  for (int64_t r = 0; r < n; ++r) {
    uint8_t* out = packed + r * w.row_bytes();
    if (bits == 8) {
      std::memcpy(out, weight + r * k, static_cast<size_t>(k));
      std::memset(out + k, 0, static_cast<size_t>(w.kp - k));
    } else {
      // The file's nibbles already hold w + 8; padding is 0 + 8.
      const uint8_t* in = weight + r * (k / 2);
      auto nib = [&](int64_t j) -> uint8_t {
        return j < k ? static_cast<uint8_t>((in[j >> 1] >> ((j & 1) * 4)) & 0x0F) : 8;
      };
      for (int64_t c = 0; c < w.kp / kChunk; ++c) {
        for (int64_t i = 0; i < 32; ++i) {
          out[c * 32 + i] = static_cast<uint8_t>(nib(c * kChunk + i) |
                                                 (nib(c * kChunk + 32 + i) << 4));
        }
      }
    }
    for (int64_t g = 0; g < w.scale_stride; ++g) {
      sc[r * w.scale_stride + g] = g < groups ? scales[r * groups + g] : 0.0f;
    }
    double t = 0.0;
    for (int64_t g = 0; g < groups; ++g) {
      int64_t sum = 0;
      for (int64_t i = g * group; i < (g + 1) * group; ++i) {
        sum += bits == 8 ? static_cast<int8_t>(weight[r * k + i])
                         : ((weight[r * (k / 2) + (i >> 1)] >> ((i & 1) * 4)) & 0x0F) - 8;
      }
      t += static_cast<double>(scales[r * groups + g]) * static_cast<double>(sum);
    }
    s1[r] = static_cast<float>(t);
  }
  w.w = packed;
  w.scales = sc;
  w.s1 = s1;
  return w;
}

int intx_weight_at(const IntxWeights& w, int64_t row, int64_t col) {
  if (w.tiled) {
    const int64_t t = row / kTileCols, j = row % kTileCols, b = col / kBlock;
    const int64_t q = (col % kBlock) / 4, i = col % 4;
    const int64_t block = t * (w.k / kBlock) + b;
    if (w.bits == 8) return static_cast<int8_t>(w.w[(block * 8 + q) * 64 + j * 4 + i]);
    const uint8_t v = w.w[(block * 4 + q / 2) * 64 + j * 4 + i];
    return static_cast<int>((q & 1) ? (v >> 4) : (v & 0x0F)) - 8;
  }
  const uint8_t* r = w.w + row * w.row_bytes();
  if (w.bits == 8) return static_cast<int8_t>(r[col]);
  const int64_t c = col / kChunk, i = col % kChunk;
  const uint8_t b = r[c * 32 + (i % 32)];
  return static_cast<int>(i < 32 ? (b & 0x0F) : (b >> 4)) - 8;
}

void intx_quantize_row(const float* x, int64_t k, int64_t kp, uint8_t* u, float* scale,
                       int32_t* zero_point) {
  float mn = 0.0f, mx = 0.0f;
  for (int64_t i = 0; i < k; ++i) {
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  // choose_qparams_affine (ASYMMETRIC, int8): float32 throughout, as eager.
  float s = (mx - mn) / 255.0f;
  if (s < FLT_MIN) s = FLT_MIN;
  float zf = -128.0f - std::nearbyint(mn / s);
  zf = zf < -128.0f ? -128.0f : (zf > 127.0f ? 127.0f : zf);
  // quantize_affine: x times the float32 reciprocal, rounded half to even.
  const float inv = 1.0f / s;
  for (int64_t i = 0; i < k; ++i) {
    float q = std::nearbyint(x[i] * inv) + zf;
    q = q < -128.0f ? -128.0f : (q > 127.0f ? 127.0f : q);
    u[i] = static_cast<uint8_t>(static_cast<int32_t>(q) + 128);
  }
  for (int64_t i = k; i < kp; ++i) u[i] = 0;
  *scale = s;
  *zero_point = static_cast<int32_t>(zf);
}

void intx_linear_rows(const IntxWeights& w, const uint8_t* u, const float* sx,
                      const int32_t* zx, int64_t rows, int64_t first, int64_t last, float* y,
                      int64_t ldy) {
#if EMBER_ISA_X86
  if (w.tiled) {
    // Column ranges are multiples of 16 (the op splits them so) but the last.
    rows_tiled(w, u, sx, zx, rows, first / kTileCols, (last + kTileCols - 1) / kTileCols, y,
               ldy);
    return;
  }
#endif
  const bool g32 = w.group == 32;
  const bool simd = w.kind != QGemmKind::kBaseline && (g32 || w.group % kChunk == 0);
  if (!simd || !EMBER_ISA_X86) {
    rows_baseline(w, u, sx, zx, rows, first, last, y, ldy);
    return;
  }
  if (w.bits == 4) {
    if (g32) {
      rows_kind<4, true>(w, u, sx, zx, rows, first, last, y, ldy);
    } else {
      rows_kind<4, false>(w, u, sx, zx, rows, first, last, y, ldy);
    }
  } else if (g32) {
    rows_kind<8, true>(w, u, sx, zx, rows, first, last, y, ldy);
  } else {
    rows_kind<8, false>(w, u, sx, zx, rows, first, last, y, ldy);
  }
}

}  // namespace ember::kernels::quantized
