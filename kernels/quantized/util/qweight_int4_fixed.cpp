#include "kernels/quantized/util/qweight_int4_fixed.h"

#include <cmath>
#include <cstring>

#include "kernels/portable/util/isa_target.h"
#include "kernels/quantized/util/qweight_int4.h"

#if EMBER_ISA_X86
#include <immintrin.h>
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define EMBER_INT4_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
#endif

namespace ember::kernels::quantized {
namespace {

constexpr int64_t kRows = kInt4FixedRows;
constexpr int64_t kChunk = kInt4FixedChunk;
constexpr int64_t kLine = 64;
constexpr int64_t kTileBytes = kRows * kChunk / 2;  // 4 lines
constexpr int64_t kLimbs = 3;
// No software prefetch: a block is one sequential stream that the hardware
// prefetcher follows. On a Zen 4 core, prefetching 8 KiB ahead into L2 (what
// the float kernels do) gave 18 G weights/s from DRAM, 2 KiB ahead 36-38,
// none 40-41 (qweight_gemv_bench, 4 TinyLlama layers).
// v = round(x · 2^(kBits − E)), |v| ≤ 2^kBits: 32 · 8 · 2^22 = 2^30 fits int32.
constexpr int kBits = 22;

int64_t header_bytes_of(bool zero_term) { return zero_term ? 2 * kLine : kLine; }

int64_t group_bytes_of(int64_t group, bool zero_term) {
  return header_bytes_of(zero_term) + group / kChunk * kTileBytes;
}

const uint8_t* group_at(const Int4FixedWeights& w, int64_t block, int64_t g) {
  return w.data + block * w.block_bytes + g * group_bytes_of(w.group, w.zero_term);
}

// Where row L's weight at offset o (in its group) sits: the byte and whether
// it is the high nibble.
int64_t byte_of(int64_t L, int64_t o, bool* high) {
  const int64_t t = o / kChunk, i = o % kChunk / 8, j = o % 8;
  *high = j >= 4;
  return t * kTileBytes + i * kLine + 4 * L + (j & 3);
}

int64_t chunks_of(int64_t k) { return k / kChunk; }

int64_t align64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// The input's arrays in its memory: limbs, then step, sum_v, sum_x.
struct InputOffsets {
  int64_t step, sum_v, sum_x, total;
};

InputOffsets input_offsets(int64_t rows, int64_t k) {
  const int64_t chunks = rows * chunks_of(k);
  InputOffsets o;
  o.step = align64(chunks * kLimbs * kChunk);
  o.sum_v = o.step + align64(chunks * 4);
  o.sum_x = o.sum_v + align64(chunks * 4);
  o.total = o.sum_x + align64(chunks * 4);
  return o;
}

// One chunk's fixed point, in double (exact for every float): the reference
// the vector build matches bit for bit.
bool chunk_scalar(const float* x, int8_t* limbs, float* step, int32_t* sum_v, float* sum_x) {
  float mx = 0.0f, sx = 0.0f;
  for (int64_t j = 0; j < kChunk; ++j) {
    const float a = std::fabs(x[j]);
    if (!(a <= 3.4028234663852886e38f)) return false;  // NaN or infinity
    mx = a > mx ? a : mx;
    sx += x[j];
  }
  int e = 0;
  if (mx > 0.0f) std::frexp(mx, &e);  // mx < 2^e
  const double mul = std::ldexp(1.0, kBits - e);
  int32_t sv = 0;
  for (int64_t j = 0; j < kChunk; ++j) {
    const auto v = static_cast<int32_t>(std::nearbyint(static_cast<double>(x[j]) * mul));
    const int32_t l0 = ((v + 128) & 255) - 128;
    const int32_t v1 = (v - l0) / 256;
    const int32_t l1 = ((v1 + 128) & 255) - 128;
    const int32_t l2 = (v1 - l1) / 256;
    limbs[j] = static_cast<int8_t>(l0);
    limbs[kChunk + j] = static_cast<int8_t>(l1);
    limbs[2 * kChunk + j] = static_cast<int8_t>(l2);
    sv += v;
  }
  *step = std::ldexp(1.0f, e - kBits);
  *sum_v = sv;
  *sum_x = sx;
  return true;
}

template <typename U>
Int4FixedWeights pack_from(const U& u, const float* scales, const float* zeros, int64_t n,
                          int64_t k, int64_t group, void* mem) {
  Int4FixedWeights p;
  p.n = n;
  p.k = k;
  p.group = group;
  p.groups = k / group;
  p.zero_term = qweight_int4_has_zero_term(scales, zeros, n * p.groups);
  p.block_bytes = p.groups * group_bytes_of(group, p.zero_term);
  auto* out = static_cast<uint8_t*>(mem);
  p.data = out;
  const int64_t blocks = (n + kRows - 1) / kRows;
  // Rows past n: nibble 8 (q = 0) and s = c = 0.
  std::memset(out, 0x88, static_cast<size_t>(blocks * p.block_bytes));
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t g = 0; g < p.groups; ++g) {
      auto* base = const_cast<uint8_t*>(group_at(p, b, g));
      float h[2 * kRows] = {};
      uint8_t* tiles = base + header_bytes_of(p.zero_term);
      for (int64_t L = 0; L < kRows; ++L) {
        const int64_t row = b * kRows + L;
        if (row >= n) break;
        const float s = scales[row * p.groups + g];
        const float z = zeros != nullptr ? zeros[row * p.groups + g] : 0.0f;
        h[L] = s;
        h[kRows + L] = -z * s;
        for (int64_t o = 0; o < group; ++o) {
          bool high = false;
          uint8_t& byte = tiles[byte_of(L, o, &high)];
          const uint8_t v = u(row, g * group + o);
          byte = high ? static_cast<uint8_t>((byte & 0x0F) | (v << 4))
                      : static_cast<uint8_t>((byte & 0xF0) | v);
        }
      }
      std::memcpy(base, h, static_cast<size_t>(header_bytes_of(p.zero_term)));
    }
  }
  return p;
}

#if EMBER_ISA_X86

// 16 rows × M input rows per pass over a block. Per tile and limb, VPDPBUSD
// sums 4 k per lane; one input row keeps the low and high nibbles' sums
// apart (6 chains of 4), more rows one chain each.
template <int M>
EMBER_INT4_VNNI_TARGET void blocks_vnni(const Int4FixedWeights& w, const Int4FixedInput& x,
                                        int64_t b0, int64_t b1, int64_t last, const float* bias,
                                        float* y) {
  constexpr int S = M == 1 ? 2 : 1;
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const int64_t chunks = chunks_of(w.k);
  const int64_t tiles = w.group / kChunk;
  for (int64_t b = b0; b < b1; ++b) {
    __m512 acc[M];
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* base = group_at(w, b, g);
      const __m512 s = _mm512_load_ps(reinterpret_cast<const float*>(base));
      const uint8_t* q = base + header_bytes_of(w.zero_term);
      if (w.zero_term) {
        const __m512 c = _mm512_load_ps(reinterpret_cast<const float*>(base + kLine));
#pragma GCC unroll 4
        for (int m = 0; m < M; ++m) {
          float sx = 0.0f;
          for (int64_t t = 0; t < tiles; ++t) sx += x.sum_x[m * chunks + g * tiles + t];
          acc[m] = _mm512_fmadd_ps(c, _mm512_set1_ps(sx), acc[m]);
        }
      }
      for (int64_t t = 0; t < tiles; ++t, q += kTileBytes) {
        const int64_t chunk = g * tiles + t;
        __m512i d[M][kLimbs][S];
#pragma GCC unroll 4
        for (int m = 0; m < M; ++m) {
#pragma GCC unroll 3
          for (int l = 0; l < kLimbs; ++l) {
#pragma GCC unroll 2
            for (int h = 0; h < S; ++h) d[m][l][h] = _mm512_setzero_si512();
          }
        }
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m512i v = _mm512_load_si512(q + i * kLine);
          const __m512i lo = _mm512_and_si512(v, low4);
          const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
#pragma GCC unroll 4
          for (int m = 0; m < M; ++m) {
            const int8_t* lm = x.limbs + (m * chunks + chunk) * kLimbs * kChunk + 8 * i;
#pragma GCC unroll 3
            for (int l = 0; l < kLimbs; ++l) {
              int32_t xl, xh;
              std::memcpy(&xl, lm + l * kChunk, 4);
              std::memcpy(&xh, lm + l * kChunk + 4, 4);
              d[m][l][0] = _mm512_dpbusd_epi32(d[m][l][0], lo, _mm512_set1_epi32(xl));
              d[m][l][S - 1] = _mm512_dpbusd_epi32(d[m][l][S - 1], hi, _mm512_set1_epi32(xh));
            }
          }
        }
#pragma GCC unroll 4
        for (int m = 0; m < M; ++m) {
          __m512i l0 = d[m][0][0], l1 = d[m][1][0], l2 = d[m][2][0];
          if constexpr (S == 2) {
            l0 = _mm512_add_epi32(l0, d[m][0][1]);
            l1 = _mm512_add_epi32(l1, d[m][1][1]);
            l2 = _mm512_add_epi32(l2, d[m][2][1]);
          }
          // Σ u·v − 8·Σ v = Σ q·v, exact in int32 (wraparound cancels).
          const __m512i sum = _mm512_sub_epi32(
              _mm512_add_epi32(_mm512_add_epi32(l0, _mm512_slli_epi32(l1, 8)),
                               _mm512_slli_epi32(l2, 16)),
              _mm512_set1_epi32(8 * x.sum_v[m * chunks + chunk]));
          acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                                   _mm512_mul_ps(s, _mm512_set1_ps(x.step[m * chunks + chunk])),
                                   acc[m]);
        }
      }
    }
    const int64_t row0 = b * kRows;
    const int64_t valid = last - row0 < kRows ? last - row0 : kRows;
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) {
      __m512 v = acc[m];
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias + row0));
      _mm512_mask_storeu_ps(y + m * w.n + row0, mask, v);
    }
  }
}

// The input chunks with 512-bit vectors: x · 2^(22−E) is exact in float when
// 2^(22−E) is a normal float (E ≥ −105), and VCVTPS2DQ rounds to nearest
// even, as nearbyint does. Other chunks go through chunk_scalar.
EMBER_INT4_VNNI_TARGET bool input_vnni(const float* x, int64_t count, int8_t* limbs,
                                       float* step, int32_t* sum_v, float* sum_x) {
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  const __m512i lo8 = _mm512_set1_epi32(255), half = _mm512_set1_epi32(128);
  for (int64_t c = 0; c < count; ++c) {
    const float* xc = x + c * kChunk;
    int8_t* lc = limbs + c * kLimbs * kChunk;
    const __m512 a = _mm512_loadu_ps(xc), b = _mm512_loadu_ps(xc + 16);
    const __m512 mxv = _mm512_max_ps(_mm512_and_ps(a, abs_mask), _mm512_and_ps(b, abs_mask));
    // NaN compares unordered: a chunk with one fails the finite test below.
    const __mmask16 finite = _mm512_cmp_ps_mask(_mm512_and_ps(a, abs_mask),
                                                _mm512_set1_ps(3.4028234663852886e38f),
                                                _CMP_LE_OQ) &
                             _mm512_cmp_ps_mask(_mm512_and_ps(b, abs_mask),
                                                _mm512_set1_ps(3.4028234663852886e38f),
                                                _CMP_LE_OQ);
    if (finite != 0xFFFF) return false;
    const float mx = _mm512_reduce_max_ps(mxv);
    int e = 0;
    if (mx > 0.0f) std::frexp(mx, &e);
    if (e < -105) {
      if (!chunk_scalar(xc, lc, step + c, sum_v + c, sum_x + c)) return false;
      continue;
    }
    const __m512 mul = _mm512_set1_ps(std::ldexp(1.0f, kBits - e));
    __m512i sv = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(h == 0 ? a : b, mul));
      const __m512i l0 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(v, half), lo8), half);
      const __m512i v1 = _mm512_srai_epi32(_mm512_sub_epi32(v, l0), 8);
      const __m512i l1 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(v1, half), lo8), half);
      const __m512i l2 = _mm512_srai_epi32(_mm512_sub_epi32(v1, l1), 8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(lc + 16 * h), _mm512_cvtepi32_epi8(l0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(lc + kChunk + 16 * h),
                       _mm512_cvtepi32_epi8(l1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(lc + 2 * kChunk + 16 * h),
                       _mm512_cvtepi32_epi8(l2));
      sv = _mm512_add_epi32(sv, v);
    }
    step[c] = std::ldexp(1.0f, e - kBits);
    sum_v[c] = _mm512_reduce_add_epi32(sv);
    // Σ x in the scalar loop's order (the zero term's factor).
    float sx = 0.0f;
    for (int64_t j = 0; j < kChunk; ++j) sx += xc[j];
    sum_x[c] = sx;
  }
  return true;
}

// AVX2: each 64-byte line is two 32-byte halves (rows 0-7, 8-15). VPMADDUBSW
// multiplies the nibbles by a limb's bytes and adds pairs into int16 (at
// most 2 · 15 · 128 = 3840), the low and high nibbles' and the 4 lines' sums
// stay int16 (at most 8 · 3840 = 30720), and one VPMADDWD per tile, half and
// limb widens them to int32 sums of 4 k per lane, as VPDPBUSD's. One input
// row at a time.
EMBER_TARGET_AVX2_FMA void blocks_avx2(const Int4FixedWeights& w, const Int4FixedInput& x,
                                       int64_t b0, int64_t b1, int64_t last, const float* bias,
                                       float* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const int64_t chunks = chunks_of(w.k);
  const int64_t tiles = w.group / kChunk;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t row0 = b * kRows;
    for (int64_t m = 0; m < x.rows; ++m) {
      __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
      for (int64_t g = 0; g < w.groups; ++g) {
        const uint8_t* base = group_at(w, b, g);
        const auto* h = reinterpret_cast<const float*>(base);
        const __m256 s[2] = {_mm256_load_ps(h), _mm256_load_ps(h + 8)};
        const uint8_t* q = base + header_bytes_of(w.zero_term);
        if (w.zero_term) {
          float sx = 0.0f;
          for (int64_t t = 0; t < tiles; ++t) sx += x.sum_x[m * chunks + g * tiles + t];
          for (int half = 0; half < 2; ++half) {
            acc[half] = _mm256_fmadd_ps(_mm256_load_ps(h + kRows + 8 * half), _mm256_set1_ps(sx),
                                        acc[half]);
          }
        }
        for (int64_t t = 0; t < tiles; ++t, q += kTileBytes) {
          const int64_t mc = m * chunks + g * tiles + t;
          const int8_t* lm = x.limbs + mc * kLimbs * kChunk;
          __m256i p[2][kLimbs];
#pragma GCC unroll 2
          for (int half = 0; half < 2; ++half) {
#pragma GCC unroll 3
            for (int l = 0; l < kLimbs; ++l) p[half][l] = _mm256_setzero_si256();
          }
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) {
            __m256i xl[kLimbs], xh[kLimbs];
#pragma GCC unroll 3
            for (int l = 0; l < kLimbs; ++l) {
              int32_t a, c;
              std::memcpy(&a, lm + l * kChunk + 8 * i, 4);
              std::memcpy(&c, lm + l * kChunk + 8 * i + 4, 4);
              xl[l] = _mm256_set1_epi32(a);
              xh[l] = _mm256_set1_epi32(c);
            }
#pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
              const __m256i v =
                  _mm256_load_si256(reinterpret_cast<const __m256i*>(q + i * kLine + 32 * half));
              const __m256i lo = _mm256_and_si256(v, low4);
              const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
#pragma GCC unroll 3
              for (int l = 0; l < kLimbs; ++l) {
                p[half][l] = _mm256_add_epi16(
                    p[half][l], _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl[l]),
                                                 _mm256_maddubs_epi16(hi, xh[l])));
              }
            }
          }
          const __m256 step = _mm256_set1_ps(x.step[mc]);
          const __m256i sv8 = _mm256_set1_epi32(8 * x.sum_v[mc]);
#pragma GCC unroll 2
          for (int half = 0; half < 2; ++half) {
            const __m256i l0 = _mm256_madd_epi16(p[half][0], ones);
            const __m256i l1 = _mm256_madd_epi16(p[half][1], ones);
            const __m256i l2 = _mm256_madd_epi16(p[half][2], ones);
            const __m256i sum = _mm256_sub_epi32(
                _mm256_add_epi32(_mm256_add_epi32(l0, _mm256_slli_epi32(l1, 8)),
                                 _mm256_slli_epi32(l2, 16)),
                sv8);
            acc[half] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(s[half], step),
                                        acc[half]);
          }
        }
      }
      float out[kRows];
      _mm256_storeu_ps(out, acc[0]);
      _mm256_storeu_ps(out + 8, acc[1]);
      for (int64_t L = 0; L < kRows && row0 + L < last; ++L) {
        y[m * w.n + row0 + L] = bias != nullptr ? out[L] + bias[row0 + L] : out[L];
      }
    }
  }
}

// The input chunks with 256-bit vectors (as input_vnni; the same bytes).
EMBER_TARGET_AVX2_FMA bool input_avx2(const float* x, int64_t count, int8_t* limbs, float* step,
                                      int32_t* sum_v, float* sum_x) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 fmax = _mm256_set1_ps(3.4028234663852886e38f);
  const __m256i lo8 = _mm256_set1_epi32(255), half = _mm256_set1_epi32(128);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t c = 0; c < count; ++c) {
    const float* xc = x + c * kChunk;
    int8_t* lc = limbs + c * kLimbs * kChunk;
    __m256 a[4];
    __m256 mxv = _mm256_setzero_ps();
    int finite = 0xFF;
    for (int j = 0; j < 4; ++j) {
      a[j] = _mm256_loadu_ps(xc + 8 * j);
      const __m256 abs = _mm256_and_ps(a[j], abs_mask);
      finite &= _mm256_movemask_ps(_mm256_cmp_ps(abs, fmax, _CMP_LE_OQ));
      mxv = _mm256_max_ps(mxv, abs);
    }
    if (finite != 0xFF) return false;
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mxv), _mm256_extractf128_ps(mxv, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    const float mx = _mm_cvtss_f32(m4);
    int e = 0;
    if (mx > 0.0f) std::frexp(mx, &e);
    if (e < -105) {
      if (!chunk_scalar(xc, lc, step + c, sum_v + c, sum_x + c)) return false;
      continue;
    }
    const __m256 mul = _mm256_set1_ps(std::ldexp(1.0f, kBits - e));
    __m256i sv = _mm256_setzero_si256();
    __m256i limb[kLimbs][4];
    for (int j = 0; j < 4; ++j) {
      const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(a[j], mul));
      const __m256i l0 = _mm256_sub_epi32(_mm256_and_si256(_mm256_add_epi32(v, half), lo8), half);
      const __m256i v1 = _mm256_srai_epi32(_mm256_sub_epi32(v, l0), 8);
      const __m256i l1 = _mm256_sub_epi32(_mm256_and_si256(_mm256_add_epi32(v1, half), lo8), half);
      limb[0][j] = l0;
      limb[1][j] = l1;
      limb[2][j] = _mm256_srai_epi32(_mm256_sub_epi32(v1, l1), 8);
      sv = _mm256_add_epi32(sv, v);
    }
    // 4 × 8 int32 (each in int8's range) → 32 int8 in order: the packs work
    // per 128-bit lane, the permute puts the lanes' dwords back in order.
    for (int l = 0; l < kLimbs; ++l) {
      const __m256i w16a = _mm256_packs_epi32(limb[l][0], limb[l][1]);
      const __m256i w16b = _mm256_packs_epi32(limb[l][2], limb[l][3]);
      const __m256i b8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w16a, w16b), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lc + l * kChunk), b8);
    }
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sv), _mm256_extracti128_si256(sv, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    step[c] = std::ldexp(1.0f, e - kBits);
    sum_v[c] = _mm_cvtsi128_si32(s4);
    float sx = 0.0f;
    for (int64_t j = 0; j < kChunk; ++j) sx += xc[j];
    sum_x[c] = sx;
  }
  return true;
}

// Row L's weights of `tiles` consecutive tiles at q (a group's), looked up in
// `table` (u → (u − 8)·s + c) to dst[0 .. 32·tiles): the row's 4 bytes of each
// line hold k 8i..8i+3 in their low nibbles and 8i+4..8i+7 in their high.
EMBER_INT4_VNNI_TARGET void dequantize_tiles_vnni(const uint8_t* q, int64_t tiles, int64_t L,
                                                  const float* table, float* dst) {
  const __m512 t = _mm512_loadu_ps(table);
  const __m128i low4 = _mm_set1_epi8(0x0F);
  for (int64_t i = 0; i < tiles; ++i, q += kTileBytes, dst += kChunk) {
    int32_t d[4];
    for (int j = 0; j < 4; ++j) std::memcpy(&d[j], q + j * kLine + 4 * L, 4);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d));
    const __m128i lo = _mm_and_si128(v, low4);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4);
    // Line j's low then high nibbles: k 8j..8j+7 in order.
    const __m128i k0 = _mm_unpacklo_epi32(lo, hi), k1 = _mm_unpackhi_epi32(lo, hi);
    _mm512_storeu_ps(dst, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(k0), t));
    _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(k1), t));
  }
}

// The same with 256-bit vectors: 8-entry VPERMPS on both halves of the
// table, bit 3 of the index (moved to the sign) picks one.
EMBER_TARGET_AVX2_FMA void dequantize_tiles_avx2(const uint8_t* q, int64_t tiles, int64_t L,
                                                 const float* table, float* dst) {
  const __m256 t_lo = _mm256_loadu_ps(table), t_hi = _mm256_loadu_ps(table + 8);
  const __m128i low4 = _mm_set1_epi8(0x0F);
  for (int64_t i = 0; i < tiles; ++i, q += kTileBytes, dst += kChunk) {
    int32_t d[4];
    for (int j = 0; j < 4; ++j) std::memcpy(&d[j], q + j * kLine + 4 * L, 4);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d));
    const __m128i lo = _mm_and_si128(v, low4);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4);
    const __m128i k01 = _mm_unpacklo_epi32(lo, hi), k23 = _mm_unpackhi_epi32(lo, hi);
    const __m128i parts[4] = {k01, _mm_srli_si128(k01, 8), k23, _mm_srli_si128(k23, 8)};
    for (int j = 0; j < 4; ++j) {
      const __m256i idx = _mm256_cvtepu8_epi32(parts[j]);
      const __m256 a = _mm256_permutevar8x32_ps(t_lo, idx);
      const __m256 b = _mm256_permutevar8x32_ps(t_hi, idx);
      _mm256_storeu_ps(dst + 8 * j,
                       _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28))));
    }
  }
}

#endif  // EMBER_ISA_X86

}  // namespace

bool qweight_int4_fixed_vnni_host() {
  // Read once (first at prepare): the kernels ask on every call. host_isa's
  // AVX-512 level has F/BW/DQ/VL; VNNI is on top (as qgemm's check).
#if EMBER_ISA_X86
  static const bool vnni = portable::host_isa() >= portable::Isa::kAvx512 &&
                           (__builtin_cpu_init(), __builtin_cpu_supports("avx512vnni"));
  return vnni;
#else
  return false;
#endif
}

bool qweight_int4_fixed_preferred(portable::Isa isa) {
  if (isa >= portable::Isa::kAvx512) return qweight_int4_fixed_vnni_host();
  return isa == portable::Isa::kAvx2;
}

bool qweight_int4_fixed_supports(int64_t k, int64_t group) {
  return group > 0 && group % kChunk == 0 && k % group == 0;
}

size_t qweight_int4_fixed_packed_bytes(int64_t n, int64_t k, int64_t group, bool zero_term) {
  const int64_t blocks = (n + kRows - 1) / kRows;
  return static_cast<size_t>(blocks * (k / group) * group_bytes_of(group, zero_term));
}

Int4FixedWeights qweight_int4_fixed_pack(const int8_t* w, const float* scales, const float* zeros,
                                       int64_t n, int64_t k, int64_t group, void* mem) {
  const auto u = [w, k](int64_t row, int64_t i) {
    return static_cast<uint8_t>(w[row * k + i] + 8);
  };
  return pack_from(u, scales, zeros, n, k, group, mem);
}

Int4FixedWeights qweight_int4_fixed_pack_nibbles(const uint8_t* w, const float* scales,
                                               const float* zeros, int64_t n, int64_t k,
                                               int64_t group, void* mem) {
  const auto u = [w, k](int64_t row, int64_t i) {
    const uint8_t byte = w[row * (k / 2) + i / 2];
    return static_cast<uint8_t>(i % 2 == 0 ? byte & 15 : byte >> 4);
  };
  return pack_from(u, scales, zeros, n, k, group, mem);
}

void qweight_int4_fixed_dequantize(const Int4FixedWeights& w, int64_t row, int64_t k0,
                                  int64_t count, float* dst, int64_t stride, portable::Isa isa) {
  const int64_t block = row / kRows, L = row % kRows;
  int64_t i = 0;
#if EMBER_ISA_X86
  // Whole tiles into contiguous floats: a table per group, built here (no
  // FMA in this build) so its values are the loop's below.
  if (stride == 1 && isa >= portable::Isa::kAvx2 && k0 % kChunk == 0) {
    const int64_t whole = count / kChunk * kChunk;
    while (i < whole) {
      const int64_t kk = k0 + i, g = kk / w.group;
      const uint8_t* base = group_at(w, block, g);
      const auto* h = reinterpret_cast<const float*>(base);
      const float s = h[L], c = w.zero_term ? h[kRows + L] : 0.0f;
      float table[16];
      for (int u = 0; u < 16; ++u) table[u] = static_cast<float>(u - 8) * s + c;
      const int64_t t0 = (kk - g * w.group) / kChunk;
      int64_t tiles = w.group / kChunk - t0;
      if (tiles > (whole - i) / kChunk) tiles = (whole - i) / kChunk;
      const uint8_t* q = base + header_bytes_of(w.zero_term) + t0 * kTileBytes;
      if (isa >= portable::Isa::kAvx512 && qweight_int4_fixed_vnni_host()) {
        dequantize_tiles_vnni(q, tiles, L, table, dst + i);
      } else {
        dequantize_tiles_avx2(q, tiles, L, table, dst + i);
      }
      i += tiles * kChunk;
    }
  }
#else
  (void)isa;
#endif
  for (; i < count; ++i) {
    const int64_t kk = k0 + i, g = kk / w.group, o = kk % w.group;
    const uint8_t* base = group_at(w, block, g);
    const auto* h = reinterpret_cast<const float*>(base);
    const float s = h[L], c = w.zero_term ? h[kRows + L] : 0.0f;
    bool high = false;
    const uint8_t byte = base[header_bytes_of(w.zero_term) + byte_of(L, o, &high)];
    const int u = high ? byte >> 4 : byte & 15;
    dst[i * stride] = static_cast<float>(u - 8) * s + c;
  }
}

size_t qweight_int4_fixed_input_bytes(int64_t rows, int64_t k) {
  return static_cast<size_t>(input_offsets(rows, k).total);
}

bool qweight_int4_fixed_input(const float* x, int64_t rows, int64_t k, void* mem,
                             Int4FixedInput* out, portable::Isa isa) {
  const InputOffsets o = input_offsets(rows, k);
  auto* base = static_cast<uint8_t*>(mem);
  auto* limbs = reinterpret_cast<int8_t*>(base);
  auto* step = reinterpret_cast<float*>(base + o.step);
  auto* sum_v = reinterpret_cast<int32_t*>(base + o.sum_v);
  auto* sum_x = reinterpret_cast<float*>(base + o.sum_x);
  const int64_t count = rows * chunks_of(k);
#if EMBER_ISA_X86
  if (isa >= portable::Isa::kAvx512 && qweight_int4_fixed_vnni_host()) {
    if (!input_vnni(x, count, limbs, step, sum_v, sum_x)) return false;
  } else if (isa >= portable::Isa::kAvx2) {
    if (!input_avx2(x, count, limbs, step, sum_v, sum_x)) return false;
  } else
#else
  (void)isa;
#endif
  {
    for (int64_t c = 0; c < count; ++c) {
      if (!chunk_scalar(x + c * kChunk, limbs + c * kLimbs * kChunk, step + c, sum_v + c,
                        sum_x + c)) {
        return false;
      }
    }
  }
  out->rows = rows;
  out->k = k;
  out->limbs = limbs;
  out->step = step;
  out->sum_v = sum_v;
  out->sum_x = sum_x;
  return true;
}

void qweight_int4_fixed_gemv(const Int4FixedWeights& w, const Int4FixedInput& x, int64_t first,
                             int64_t last, const float* bias, float* y, portable::Isa isa) {
  if (first >= last || x.rows <= 0) return;
#if EMBER_ISA_X86
  const int64_t b0 = first / kRows, b1 = (last + kRows - 1) / kRows;
  if (isa >= portable::Isa::kAvx512 && qweight_int4_fixed_vnni_host()) {
    switch (x.rows) {
      case 1: blocks_vnni<1>(w, x, b0, b1, last, bias, y); break;
      case 2: blocks_vnni<2>(w, x, b0, b1, last, bias, y); break;
      case 3: blocks_vnni<3>(w, x, b0, b1, last, bias, y); break;
      default: blocks_vnni<4>(w, x, b0, b1, last, bias, y); break;
    }
    return;
  }
  if (isa >= portable::Isa::kAvx2) {
    blocks_avx2(w, x, b0, b1, last, bias, y);
    return;
  }
#else
  (void)isa;
#endif
  qweight_int4_fixed_gemv_reference(w, x, first, last, bias, y);
}

void qweight_int4_fixed_gemv_reference(const Int4FixedWeights& w, const Int4FixedInput& x,
                                      int64_t first, int64_t last, const float* bias, float* y) {
  const int64_t chunks = chunks_of(w.k);
  for (int64_t m = 0; m < x.rows; ++m) {
    for (int64_t row = first; row < last; ++row) {
      const int64_t block = row / kRows, L = row % kRows;
      double acc = 0.0;
      for (int64_t g = 0; g < w.groups; ++g) {
        const uint8_t* base = group_at(w, block, g);
        const auto* h = reinterpret_cast<const float*>(base);
        const double s = h[L], c = w.zero_term ? h[kRows + L] : 0.0;
        for (int64_t o = 0; o < w.group; o += kChunk) {
          const int64_t chunk = (g * w.group + o) / kChunk, mc = m * chunks + chunk;
          const int8_t* l = x.limbs + mc * kLimbs * kChunk;
          int64_t qv = 0;
          for (int64_t j = 0; j < kChunk; ++j) {
            bool high = false;
            const uint8_t byte = base[header_bytes_of(w.zero_term) + byte_of(L, o + j, &high)];
            const int64_t q = (high ? byte >> 4 : byte & 15) - 8;
            qv += q * (l[j] + 256 * l[kChunk + j] + 65536 * l[2 * kChunk + j]);
          }
          acc += s * x.step[mc] * static_cast<double>(qv) + c * x.sum_x[mc];
        }
      }
      y[m * w.n + row] = static_cast<float>(bias != nullptr ? acc + bias[row] : acc);
    }
  }
}

}  // namespace ember::kernels::quantized
