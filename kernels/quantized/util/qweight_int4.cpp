#include "kernels/quantized/util/qweight_int4.h"

#include <cstring>

#include "kernels/portable/util/isa_target.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 reduction intrinsics start from _mm256_undefined_*(),
// which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ember::kernels::quantized {
namespace {

constexpr int64_t kTile = 32;    // k per tile: 16 bytes per row
constexpr int64_t kLine = 64;
// Bytes ahead of the weight stream the AVX-512 kernel prefetches: 1 thread
// read 21 GB/s without, 31 with 8 KiB (2 KiB: 25; 16 KiB: 30), into L1 on a
// Zen 5 host. Into L2 (T1), as qweight_int8 does: on a Zen 4 core, 17-22
// against 16-22 G weights/s into L1 (the int8 kernel gained more).
constexpr int64_t kPrefetch = 8192;

int64_t tiles_of(int64_t group) { return (group + kTile - 1) / kTile; }
int64_t tile_bytes_of(int64_t group) { return kInt4Rows * 16 * tiles_of(group); }

// Groups go in sets, each set's headers (one 64-byte line: 2 groups' s[4],
// c[4], or 4 groups' s[4] when every zero term is 0) before its tiles, so a
// block is one stream of aligned lines; a last, partial set has its header
// line and its groups' tiles.
int64_t set_groups_of(bool zero_term) { return zero_term ? 2 : 4; }
int64_t header_floats_of(bool zero_term) { return zero_term ? 2 * kInt4Rows : kInt4Rows; }

int64_t block_bytes_of(int64_t k, int64_t group, bool zero_term) {
  const int64_t groups = k / group, per_set = set_groups_of(zero_term);
  const int64_t rest = groups % per_set;
  return groups / per_set * (kLine + per_set * tile_bytes_of(group)) +
         (rest > 0 ? kLine + rest * tile_bytes_of(group) : 0);
}

int64_t set_offset(const Int4Weights& w, int64_t block, int64_t g) {
  const int64_t per_set = set_groups_of(w.zero_term);
  return block * w.block_bytes + g / per_set * (kLine + per_set * tile_bytes_of(w.group));
}

const float* header_at(const Int4Weights& w, int64_t block, int64_t g) {
  return reinterpret_cast<const float*>(w.data + set_offset(w, block, g)) +
         g % set_groups_of(w.zero_term) * header_floats_of(w.zero_term);
}

const uint8_t* tiles_at(const Int4Weights& w, int64_t block, int64_t g) {
  return w.data + set_offset(w, block, g) + kLine +
         g % set_groups_of(w.zero_term) * tile_bytes_of(w.group);
}

// Row r's zero term in header h (0 when the layout has none).
float zero_term_at(const Int4Weights& w, const float* h, int64_t r) {
  return w.zero_term ? h[kInt4Rows + r] : 0.0f;
}

// Valid k of tile t in a group: 32, or fewer in the last tile of a group that
// is not a multiple of 32.
int64_t tile_width(const Int4Weights& w, int64_t t) {
  const int64_t rem = w.group - t * kTile;
  return rem < kTile ? rem : kTile;
}

// The plain loops: a 16-entry table per row and group, one lookup per weight.
void gemv_baseline(const Int4Weights& w, const float* x, int64_t rows, int64_t first,
                   int64_t last, const float* bias, float* y) {
  for (int64_t row = first; row < last; ++row) {
    const int64_t block = row / kInt4Rows, r = row % kInt4Rows;
    float acc[kInt4Rows] = {};
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* c = tiles_at(w, block, g);
      const float* h = header_at(w, block, g);
      float table[16];
      const float cz = zero_term_at(w, h, r);
      for (int u = 0; u < 16; ++u) table[u] = static_cast<float>(u - 8) * h[r] + cz;
      for (int64_t t = 0; t < w.tiles; ++t) {
        const uint8_t* q = c + t * kInt4Rows * 16 + r;
        const int64_t width = tile_width(w, t);
        const int64_t k0 = g * w.group + t * kTile;
        for (int64_t m = 0; m < rows; ++m) {
          const float* xm = x + m * w.k + k0;
          float lo = 0.0f, hi = 0.0f;
          for (int64_t j = 0; j < 16 && j < width; ++j) lo += xm[j] * table[q[4 * j] & 15];
          for (int64_t j = 16; j < width; ++j) hi += xm[j] * table[q[4 * (j - 16)] >> 4];
          acc[m] += lo + hi;
        }
      }
    }
    for (int64_t m = 0; m < rows; ++m) {
      y[m * w.n + row] = bias != nullptr ? acc[m] + bias[row] : acc[m];
    }
  }
}

#if EMBER_ISA_X86

// 4 weight rows × M input rows per pass: each 64-byte load of nibbles gives
// 4 rows × 32 weights through a shift and a VPERMPS of the row's table per
// 16; the x vectors are shared by the 4 rows. One input row keeps separate
// accumulators for the low and high halves (8 chains); more rows have enough
// chains with one each. (The first version expanded 16 bytes per row with
// VPMOVZXBD: 12 shuffles per 128 weights instead of 8, 58.6 against 69.5
// G weights/s in L1. Converting the nibbles to float and applying the scale
// per group, zero point through group sums of x, instead of the table: 36-37
// against 41-53 G weights/s in L1 at groups of 32.)
template <int M, bool kFull>
EMBER_TARGET_AVX512 void blocks_avx512(const Int4Weights& w, const float* x, int64_t b0,
                                       int64_t b1, int64_t last, const float* bias,
                                       float* y) {
  constexpr int S = M == 1 ? 2 : 1;
  const __m512 iota = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t b = b0; b < b1; ++b) {
    __m512 acc[M][kInt4Rows][S];
#pragma GCC unroll 32
    for (int m = 0; m < M; ++m) {
#pragma GCC unroll 32
      for (int r = 0; r < kInt4Rows; ++r) {
#pragma GCC unroll 2
        for (int s = 0; s < S; ++s) acc[m][r][s] = _mm512_setzero_ps();
      }
    }
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* q = tiles_at(w, b, g);
      const float* h = header_at(w, b, g);
      // The hardware prefetcher alone leaves DRAM idle between blocks.
      _mm_prefetch(reinterpret_cast<const char*>(h) + kPrefetch, _MM_HINT_T1);
      __m512 table[kInt4Rows];
#pragma GCC unroll 4
      for (int r = 0; r < kInt4Rows; ++r) {
        table[r] = _mm512_fmadd_ps(iota, _mm512_set1_ps(h[r]),
                                   _mm512_set1_ps(zero_term_at(w, h, r)));
      }
      const float* xg = x + g * w.group;
      for (int64_t t = 0; t < w.tiles; ++t, q += kInt4Rows * 16) {
        __m512 xl[M], xh[M];
        if constexpr (kFull) {
#pragma GCC unroll 4
          for (int m = 0; m < M; ++m) {
            xl[m] = _mm512_loadu_ps(xg + m * w.k + t * kTile);
            xh[m] = _mm512_loadu_ps(xg + m * w.k + t * kTile + 16);
          }
        } else {
          const int64_t width = tile_width(w, t);
          const __mmask16 ml = width >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << width) - 1);
          const __mmask16 mh =
              width >= 32 ? 0xFFFF
                          : width > 16 ? static_cast<__mmask16>((1u << (width - 16)) - 1) : 0;
#pragma GCC unroll 4
          for (int m = 0; m < M; ++m) {
            xl[m] = _mm512_maskz_loadu_ps(ml, xg + m * w.k + t * kTile);
            xh[m] = _mm512_maskz_loadu_ps(mh, xg + m * w.k + t * kTile + 16);
          }
        }
        // Lane j holds the 8 nibbles of weights j and j + 16 of the 4 rows;
        // VPERMPS reads the low 4 bits of each index, so shifts select them.
        _mm_prefetch(reinterpret_cast<const char*>(q) + kPrefetch, _MM_HINT_T1);
        const __m512i v = _mm512_load_si512(q);
#pragma GCC unroll 4
        for (int r = 0; r < kInt4Rows; ++r) {
          const __m512 wl = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 8 * r), table[r]);
          const __m512 wh = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 8 * r + 4), table[r]);
#pragma GCC unroll 4
          for (int m = 0; m < M; ++m) {
            acc[m][r][0] = _mm512_fmadd_ps(xl[m], wl, acc[m][r][0]);
            acc[m][r][S - 1] = _mm512_fmadd_ps(xh[m], wh, acc[m][r][S - 1]);
          }
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < kInt4Rows; ++r) {
      const int64_t row = b * kInt4Rows + r;
      if (row >= last) break;
#pragma GCC unroll 4
      for (int m = 0; m < M; ++m) {
        const __m512 v = S == 2 ? _mm512_add_ps(acc[m][r][0], acc[m][r][S - 1]) : acc[m][r][0];
        const float sum = _mm512_reduce_add_ps(v);
        y[m * w.n + row] = bias != nullptr ? sum + bias[row] : sum;
      }
    }
  }
}

// AVX2: 8-entry VPERMPS, so each table is two vectors and bit 3 of the index
// picks one (BLENDVPS on the index shifted into the sign bit). Two weight
// rows per pass over the block (the tables and accumulators fill the 16
// registers); one input row at a time.
EMBER_TARGET_AVX2_FMA inline __m256 lookup_avx2(__m256i idx, __m256 t_lo, __m256 t_hi) {
  const __m256 a = _mm256_permutevar8x32_ps(t_lo, idx);
  const __m256 b = _mm256_permutevar8x32_ps(t_hi, idx);
  return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}

EMBER_TARGET_AVX2_FMA void blocks_avx2(const Int4Weights& w, const float* x, int64_t rows,
                                       int64_t b0, int64_t b1, int64_t last, const float* bias,
                                       float* y) {
  const __m256 iota_lo = _mm256_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1);
  const __m256 iota_hi = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t b = b0; b < b1; ++b) {
    for (int64_t m = 0; m < rows; ++m) {
      const float* xm = x + m * w.k;
      for (int r0 = 0; r0 < kInt4Rows; r0 += 2) {
        if (b * kInt4Rows + r0 >= last) break;
        __m256 acc[2][2] = {{_mm256_setzero_ps(), _mm256_setzero_ps()},
                            {_mm256_setzero_ps(), _mm256_setzero_ps()}};
        float tail[2] = {0.0f, 0.0f};  // the scalar tiles
        for (int64_t g = 0; g < w.groups; ++g) {
          const uint8_t* q = tiles_at(w, b, g);
          const float* h = header_at(w, b, g);
          __m256 tl[2], th[2];
#pragma GCC unroll 2
          for (int i = 0; i < 2; ++i) {
            const __m256 s = _mm256_set1_ps(h[r0 + i]);
            const __m256 z = _mm256_set1_ps(zero_term_at(w, h, r0 + i));
            tl[i] = _mm256_fmadd_ps(iota_lo, s, z);
            th[i] = _mm256_fmadd_ps(iota_hi, s, z);
          }
          const float* xg = xm + g * w.group;
          for (int64_t t = 0; t < w.tiles; ++t, q += kInt4Rows * 16) {
            const int64_t width = tile_width(w, t);
            const float* xt = xg + t * kTile;
            if (width == kTile) {
#pragma GCC unroll 2
              for (int half = 0; half < 2; ++half) {
                const __m256i v =
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32 * half));
                const __m256 xl = _mm256_loadu_ps(xt + 8 * half);
                const __m256 xh = _mm256_loadu_ps(xt + 16 + 8 * half);
#pragma GCC unroll 2
                for (int i = 0; i < 2; ++i) {
                  const int sh = 8 * (r0 + i);
                  const __m256 wl = lookup_avx2(_mm256_srli_epi32(v, sh), tl[i], th[i]);
                  const __m256 wh = lookup_avx2(_mm256_srli_epi32(v, sh + 4), tl[i], th[i]);
                  acc[i][0] = _mm256_fmadd_ps(xl, wl, acc[i][0]);
                  acc[i][1] = _mm256_fmadd_ps(xh, wh, acc[i][1]);
                }
              }
            } else {
              // A group that is not a multiple of 32: its last tile, scalar.
              for (int i = 0; i < 2; ++i) {
                float tab[16];
                _mm256_storeu_ps(tab, tl[i]);
                _mm256_storeu_ps(tab + 8, th[i]);
                const uint8_t* qi = q + r0 + i;
                float s = 0.0f;
                for (int64_t j = 0; j < 16 && j < width; ++j) s += xt[j] * tab[qi[4 * j] & 15];
                for (int64_t j = 16; j < width; ++j) s += xt[j] * tab[qi[4 * (j - 16)] >> 4];
                tail[i] += s;
              }
            }
          }
        }
        for (int i = 0; i < 2; ++i) {
          const int64_t row = b * kInt4Rows + r0 + i;
          if (row >= last) break;
          const __m256 v = _mm256_add_ps(acc[i][0], acc[i][1]);
          __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
          s = _mm_add_ps(s, _mm_movehl_ps(s, s));
          s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
          const float sum = _mm_cvtss_f32(s) + tail[i];
          y[m * w.n + row] = bias != nullptr ? sum + bias[row] : sum;
        }
      }
    }
  }
}

// Row r's weights of `tiles` consecutive 32-wide tiles at c, looked up in
// `table` (q + 8 → q·s + c), to dst[0 .. 32·tiles).
EMBER_TARGET_AVX512 void dequantize_tiles_avx512(const uint8_t* c, int64_t tiles, int64_t r,
                                                 const float* table, float* dst) {
  const __m512 t = _mm512_loadu_ps(table);
  const __m128i lo = _mm_cvtsi32_si128(static_cast<int>(8 * r));
  const __m128i hi = _mm_cvtsi32_si128(static_cast<int>(8 * r + 4));
  for (int64_t q = 0; q < tiles; ++q, c += kInt4Rows * 16, dst += kTile) {
    const __m512i v = _mm512_loadu_si512(c);
    _mm512_storeu_ps(dst, _mm512_permutexvar_ps(_mm512_srl_epi32(v, lo), t));
    _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srl_epi32(v, hi), t));
  }
}

EMBER_TARGET_AVX2_FMA void dequantize_tiles_avx2(const uint8_t* c, int64_t tiles, int64_t r,
                                                 const float* table, float* dst) {
  const __m256 t_lo = _mm256_loadu_ps(table);
  const __m256 t_hi = _mm256_loadu_ps(table + 8);
  const __m128i lo = _mm_cvtsi32_si128(static_cast<int>(8 * r));
  const __m128i hi = _mm_cvtsi32_si128(static_cast<int>(8 * r + 4));
  for (int64_t q = 0; q < tiles; ++q, c += kInt4Rows * 16, dst += kTile) {
    for (int half = 0; half < 2; ++half) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 32 * half));
      _mm256_storeu_ps(dst + 8 * half, lookup_avx2(_mm256_srl_epi32(v, lo), t_lo, t_hi));
      _mm256_storeu_ps(dst + 16 + 8 * half, lookup_avx2(_mm256_srl_epi32(v, hi), t_lo, t_hi));
    }
  }
}

template <bool kFull>
void gemv_avx512(const Int4Weights& w, const float* x, int64_t rows, int64_t b0, int64_t b1,
                 int64_t last, const float* bias, float* y) {
  switch (rows) {
    case 1: blocks_avx512<1, kFull>(w, x, b0, b1, last, bias, y); break;
    case 2: blocks_avx512<2, kFull>(w, x, b0, b1, last, bias, y); break;
    case 3: blocks_avx512<3, kFull>(w, x, b0, b1, last, bias, y); break;
    default: blocks_avx512<4, kFull>(w, x, b0, b1, last, bias, y); break;
  }
}

#endif  // EMBER_ISA_X86

}  // namespace

bool qweight_int4_fits(const int8_t* w, int64_t count, int* bad, int64_t* bad_index) {
  // Branch-free per block of 64 (the check runs over every weight at load).
  for (int64_t i0 = 0; i0 < count; i0 += 64) {
    const int64_t end = i0 + 64 < count ? i0 + 64 : count;
    bool out = false;
    for (int64_t i = i0; i < end; ++i) out |= (w[i] < -8) | (w[i] > 7);
    if (!out) continue;
    for (int64_t i = i0; i < end; ++i) {
      if (w[i] < -8 || w[i] > 7) {
        if (bad != nullptr) *bad = w[i];
        if (bad_index != nullptr) *bad_index = i;
        return false;
      }
    }
  }
  return true;
}

bool qweight_int4_has_zero_term(const float* scales, const float* zeros, int64_t count) {
  if (zeros == nullptr) return false;
  for (int64_t i = 0; i < count; ++i) {
    if (-zeros[i] * scales[i] != 0.0f) return true;
  }
  return false;
}

size_t qweight_int4_packed_bytes(int64_t n, int64_t k, int64_t group, bool zero_term) {
  const int64_t blocks = (n + kInt4Rows - 1) / kInt4Rows;
  return static_cast<size_t>(blocks * block_bytes_of(k, group, zero_term));
}

namespace {

// u(row, i): row's weight i plus 8 (0..15), from either source layout.
template <typename U>
Int4Weights pack_from(const U& u, const float* scales, const float* zeros, int64_t n, int64_t k,
                      int64_t group, void* mem) {
  Int4Weights p;
  p.n = n;
  p.k = k;
  p.group = group;
  p.groups = k / group;
  p.tiles = tiles_of(group);
  p.zero_term = qweight_int4_has_zero_term(scales, zeros, n * p.groups);
  p.block_bytes = block_bytes_of(k, group, p.zero_term);
  auto* out = static_cast<uint8_t*>(mem);
  p.data = out;
  const int64_t blocks = (n + kInt4Rows - 1) / kInt4Rows;
  // Padding (rows past n, k past the group): q = 0 (nibble 8), s = c = 0.
  std::memset(out, 0x88, static_cast<size_t>(blocks * p.block_bytes));
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t g = 0; g < p.groups; ++g) {
      auto* c = const_cast<uint8_t*>(tiles_at(p, b, g));
      float h[2 * kInt4Rows] = {};
      for (int64_t r = 0; r < kInt4Rows; ++r) {
        const int64_t row = b * kInt4Rows + r;
        if (row >= n) break;
        const float s = scales[row * p.groups + g];
        const float z = zeros != nullptr ? zeros[row * p.groups + g] : 0.0f;
        h[r] = s;
        h[kInt4Rows + r] = -z * s;
        for (int64_t i = 0; i < group; ++i) {
          const int64_t t = i / kTile, j = i % kTile;
          uint8_t& byte = c[t * kInt4Rows * 16 + 4 * (j & 15) + r];
          const uint8_t v = u(row, g * group + i);
          byte = j < 16 ? static_cast<uint8_t>((byte & 0xF0) | v)
                        : static_cast<uint8_t>((byte & 0x0F) | (v << 4));
        }
      }
      std::memcpy(const_cast<float*>(header_at(p, b, g)), h,
                  static_cast<size_t>(header_floats_of(p.zero_term)) * sizeof(float));
    }
  }
  return p;
}

}  // namespace

Int4Weights qweight_int4_pack(const int8_t* w, const float* scales, const float* zeros,
                              int64_t n, int64_t k, int64_t group, void* mem) {
  const auto u = [w, k](int64_t row, int64_t i) {
    return static_cast<uint8_t>(w[row * k + i] + 8);
  };
  return pack_from(u, scales, zeros, n, k, group, mem);
}

Int4Weights qweight_int4_pack_nibbles(const uint8_t* w, const float* scales, const float* zeros,
                                      int64_t n, int64_t k, int64_t group, void* mem) {
  const auto u = [w, k](int64_t row, int64_t i) {
    const uint8_t byte = w[row * (k / 2) + i / 2];
    return static_cast<uint8_t>(i % 2 == 0 ? byte & 15 : byte >> 4);
  };
  return pack_from(u, scales, zeros, n, k, group, mem);
}

float qweight_int4_at(const Int4Weights& w, int64_t row, int64_t col) {
  float v;
  qweight_int4_dequantize(w, row, col, 1, &v, 1);
  return v;
}

void qweight_int4_dequantize(const Int4Weights& w, int64_t row, int64_t k0, int64_t count,
                             float* dst, int64_t stride, portable::Isa isa) {
  const int64_t block = row / kInt4Rows, r = row % kInt4Rows;
  int64_t i = 0;
#if EMBER_ISA_X86
  // Whole 32-wide tiles into contiguous floats: one table per group (built
  // here, in the baseline build, so its values are the loop's below) and a
  // VPERMPS per 16 weights.
  if (stride == 1 && isa >= portable::Isa::kAvx2 && w.group % kTile == 0 && k0 % kTile == 0) {
    const int64_t whole = count / kTile * kTile;
    while (i < whole) {
      const int64_t kk = k0 + i;
      const int64_t g = kk / w.group;
      const float* h = header_at(w, block, g);
      float table[16];
      const float s = h[r], z = zero_term_at(w, h, r);
      for (int u = 0; u < 16; ++u) table[u] = static_cast<float>(u - 8) * s + z;
      const int64_t t0 = (kk - g * w.group) / kTile;
      int64_t tiles = w.tiles - t0;
      if (tiles > (whole - i) / kTile) tiles = (whole - i) / kTile;
      const uint8_t* c = tiles_at(w, block, g) + t0 * kInt4Rows * 16;
      if (isa >= portable::Isa::kAvx512) {
        dequantize_tiles_avx512(c, tiles, r, table, dst + i);
      } else {
        dequantize_tiles_avx2(c, tiles, r, table, dst + i);
      }
      i += tiles * kTile;
    }
  }
#else
  (void)isa;
#endif
  while (i < count) {
    const int64_t kk = k0 + i;
    const int64_t g = kk / w.group;
    int64_t o = kk - g * w.group;
    const uint8_t* c = tiles_at(w, block, g);
    const float* h = header_at(w, block, g);
    const float s = h[r], z = zero_term_at(w, h, r);
    for (; o < w.group && i < count; ++o, ++i) {
      const int64_t t = o / kTile, j = o % kTile;
      const uint8_t byte = c[t * kInt4Rows * 16 + 4 * (j & 15) + r];
      const int u = j < 16 ? byte & 15 : byte >> 4;
      dst[i * stride] = static_cast<float>(u - 8) * s + z;
    }
  }
}

void qweight_int4_gemv(const Int4Weights& w, const float* x, int64_t rows, int64_t first,
                       int64_t last, const float* bias, float* y, portable::Isa isa) {
  if (first >= last || rows <= 0) return;
#if EMBER_ISA_X86
  const int64_t b0 = first / kInt4Rows, b1 = (last + kInt4Rows - 1) / kInt4Rows;
  if (isa >= portable::Isa::kAvx512) {
    if (w.group % kTile == 0) {
      gemv_avx512<true>(w, x, rows, b0, b1, last, bias, y);
    } else {
      gemv_avx512<false>(w, x, rows, b0, b1, last, bias, y);
    }
    return;
  }
  if (isa >= portable::Isa::kAvx2) {
    blocks_avx2(w, x, rows, b0, b1, last, bias, y);
    return;
  }
#else
  (void)isa;
#endif
  gemv_baseline(w, x, rows, first, last, bias, y);
}

}  // namespace ember::kernels::quantized
