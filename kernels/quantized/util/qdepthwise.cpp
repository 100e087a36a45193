#include "kernels/quantized/util/qdepthwise.h"

#include <cstring>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/util/qinterleave.h"
#include "kernels/quantized/util/qparams.h"

#if EMBER_ISA_X86
#include <immintrin.h>
// GCC 12's AVX-512 conversion, min and max intrinsics start from
// _mm512_undefined_ps(), which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ember::kernels::quantized {
namespace {

// Outputs per chunk: one AVX-512 pass, two AVX2 halves, one baseline loop.
constexpr int64_t kChunk = 32;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Scratch: the phase planes, then the flattened int8 outputs.
size_t out_offset(const QDepthwiseLayout& l) {
  return static_cast<size_t>(round_up(l.plane * l.g.sh * l.g.sw, 64));
}

// What one plane's compute loop reads: the taps in pairs, each pair's two
// int16 weights in one int32 (low half the first tap's), and each tap's
// source (flattened output position 0 of the tap in its phase plane).
struct Taps {
  int64_t pairs;
  const int32_t* w;       // pairs values
  const int8_t* base;     // The phase planes.
  const int64_t* off;     // 2 · pairs offsets into them
  int32_t corr;           // zx · Σw
};

struct Requant {
  float scale, offset, lo, hi;
  int32_t zy;
};

// The portable loop: the same exact sums, then requantize() per output.
void compute_baseline(const Taps& t, int64_t n, const Requant& r, int8_t* q) {
  for (int64_t n0 = 0; n0 < n; n0 += kChunk) {
    int32_t acc[kChunk] = {};
    for (int64_t p = 0; p < t.pairs; ++p) {
      const auto w0 = static_cast<int16_t>(t.w[p] & 0xffff);
      const auto w1 = static_cast<int16_t>(static_cast<uint32_t>(t.w[p]) >> 16);
      const int8_t* a = t.base + t.off[2 * p] + n0;
      const int8_t* b = t.base + t.off[2 * p + 1] + n0;
      for (int64_t i = 0; i < kChunk; ++i) acc[i] += w0 * a[i] + w1 * b[i];
    }
    for (int64_t i = 0; i < kChunk; ++i) {
      q[n0 + i] = requantize(static_cast<float>(acc[i] - t.corr) * r.scale + r.offset, r.lo,
                             r.hi, r.zy);
    }
  }
}

#if EMBER_ISA_X86

// 16 outputs of one pair of taps: lanes 0–3 and 8–11 into lo, 4–7 and
// 12–15 into hi (VPUNPCK works within 128-bit lanes; VPACKSSDW undoes it).
__attribute__((target("avx2"), always_inline)) inline void pair16_avx2(const int8_t* a,
                                                                       const int8_t* b,
                                                                       __m256i w, __m256i& lo,
                                                                       __m256i& hi) {
  const __m256i xa = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
  const __m256i xb = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
  lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(xa, xb), w));
  hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(xa, xb), w));
}

// No FMA in this target, so the product and the sum round separately, as in
// requantize().
__attribute__((target("avx2"), always_inline)) inline __m256i requant8_avx2(
    __m256i acc, __m256i corr, __m256 s, __m256 o, __m256 lo, __m256 hi, __m256i zy) {
  __m256 v = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc, corr));
  v = _mm256_add_ps(_mm256_mul_ps(v, s), o);
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(v), zy);
}

__attribute__((target("avx2"))) void compute_avx2(const Taps& t, int64_t n, const Requant& r,
                                                  int8_t* q) {
  const __m256i corr = _mm256_set1_epi32(t.corr), zy = _mm256_set1_epi32(r.zy);
  const __m256 s = _mm256_set1_ps(r.scale), o = _mm256_set1_ps(r.offset);
  const __m256 lo = _mm256_set1_ps(r.lo), hi = _mm256_set1_ps(r.hi);
  for (int64_t n0 = 0; n0 < n; n0 += kChunk) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, b0 = a0, b1 = a0;
    for (int64_t p = 0; p < t.pairs; ++p) {
      const __m256i w = _mm256_set1_epi32(t.w[p]);
      const int8_t* sa = t.base + t.off[2 * p] + n0;
      const int8_t* sb = t.base + t.off[2 * p + 1] + n0;
      pair16_avx2(sa, sb, w, a0, a1);
      pair16_avx2(sa + 16, sb + 16, w, b0, b1);
    }
    const __m256i p0 = _mm256_packs_epi32(requant8_avx2(a0, corr, s, o, lo, hi, zy),
                                          requant8_avx2(a1, corr, s, o, lo, hi, zy));
    const __m256i p1 = _mm256_packs_epi32(requant8_avx2(b0, corr, s, o, lo, hi, zy),
                                          requant8_avx2(b1, corr, s, o, lo, hi, zy));
    // packs_epi16 interleaves the halves' 128-bit lanes; the permute restores order.
    const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packs_epi16(p0, p1), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + n0), bytes);
  }
}

#define EMBER_QDW_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
// The VNNI build's target: a superset of EMBER_QDW_AVX512, so that the VNNI
// loop can inline the AVX-512 helpers (GCC inlines only callees whose target
// the caller's includes).
#define EMBER_QDW_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

EMBER_QDW_AVX512 inline __m512i requant16_avx512(__m512i acc, __m512i corr, __m512 s, __m512 o,
                                                 __m512 lo, __m512 hi, __m512i zy) {
  // Explicit rounding forms: GCC would contract a plain mul and add into an
  // FMA here (AVX-512F implies FMA), which rounds once instead of twice.
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, corr));
  v = _mm512_add_round_ps(_mm512_mul_round_ps(v, s, kRound), o, kRound);
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), zy);
}

// Per 128-bit lane, acc_lo holds outputs 8k..8k+3 and acc_hi 8k+4..8k+7:
// VPACKSSDW puts them back in order.
EMBER_QDW_AVX512 inline void store32_avx512(__m512i acc_lo, __m512i acc_hi, __m512i corr,
                                            __m512 s, __m512 o, __m512 lo, __m512 hi,
                                            __m512i zy, int8_t* q) {
  const __m512i words = _mm512_packs_epi32(requant16_avx512(acc_lo, corr, s, o, lo, hi, zy),
                                           requant16_avx512(acc_hi, corr, s, o, lo, hi, zy));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm512_cvtepi16_epi8(words));
}

// 32 outputs of one pair of taps from a and b, summed with VPDPWSSD (VPMADDWD
// and the add in one instruction: the same exact sums).
EMBER_QDW_AVX512_VNNI inline void pair32_vnni(const int8_t* a, const int8_t* b, __m512i w,
                                              __m512i& acc_lo, __m512i& acc_hi) {
  const __m512i xa = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
  const __m512i xb = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
  acc_lo = _mm512_dpwssd_epi32(acc_lo, _mm512_unpacklo_epi16(xa, xb), w);
  acc_hi = _mm512_dpwssd_epi32(acc_hi, _mm512_unpackhi_epi16(xa, xb), w);
}

EMBER_QDW_AVX512 void compute_avx512(const Taps& t, int64_t n, const Requant& r, int8_t* q) {
  const __m512i corr = _mm512_set1_epi32(t.corr), zy = _mm512_set1_epi32(r.zy);
  const __m512 s = _mm512_set1_ps(r.scale), o = _mm512_set1_ps(r.offset);
  const __m512 lo = _mm512_set1_ps(r.lo), hi = _mm512_set1_ps(r.hi);
  for (int64_t n0 = 0; n0 < n; n0 += kChunk) {
    __m512i acc_lo = _mm512_setzero_si512(), acc_hi = acc_lo;
    for (int64_t p = 0; p < t.pairs; ++p) {
      const __m512i w = _mm512_set1_epi32(t.w[p]);
      const __m512i xa = _mm512_cvtepi8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.base + t.off[2 * p] + n0)));
      const __m512i xb = _mm512_cvtepi8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.base + t.off[2 * p + 1] + n0)));
      acc_lo = _mm512_add_epi32(acc_lo, _mm512_madd_epi16(_mm512_unpacklo_epi16(xa, xb), w));
      acc_hi = _mm512_add_epi32(acc_hi, _mm512_madd_epi16(_mm512_unpackhi_epi16(xa, xb), w));
    }
    store32_avx512(acc_lo, acc_hi, corr, s, o, lo, hi, zy, q + n0);
  }
}

// AVX-512 VNNI (qgemm_kind() kAvx512Vnni): two chunks (64 outputs) per pass
// over the taps, so each tap's offset and weight are loaded once for both and
// four accumulators are in flight, summed with VPDPWSSD. (Kept apart from
// compute_avx512: a function built for VNNI may use it anywhere, and that one
// also runs on AVX-512 CPUs without it.)
EMBER_QDW_AVX512_VNNI void compute_avx512_vnni(const Taps& t, int64_t n, const Requant& r,
                                               int8_t* q) {
  const __m512i corr = _mm512_set1_epi32(t.corr), zy = _mm512_set1_epi32(r.zy);
  const __m512 s = _mm512_set1_ps(r.scale), o = _mm512_set1_ps(r.offset);
  const __m512 lo = _mm512_set1_ps(r.lo), hi = _mm512_set1_ps(r.hi);
  int64_t n0 = 0;
  for (; n0 + kChunk < n; n0 += 2 * kChunk) {
    __m512i a_lo = _mm512_setzero_si512(), a_hi = a_lo, b_lo = a_lo, b_hi = a_lo;
    for (int64_t p = 0; p < t.pairs; ++p) {
      const __m512i w = _mm512_set1_epi32(t.w[p]);
      const int8_t* sa = t.base + t.off[2 * p] + n0;
      const int8_t* sb = t.base + t.off[2 * p + 1] + n0;
      pair32_vnni(sa, sb, w, a_lo, a_hi);
      pair32_vnni(sa + kChunk, sb + kChunk, w, b_lo, b_hi);
    }
    store32_avx512(a_lo, a_hi, corr, s, o, lo, hi, zy, q + n0);
    store32_avx512(b_lo, b_hi, corr, s, o, lo, hi, zy, q + n0 + kChunk);
  }
  if (n0 < n) {
    __m512i a_lo = _mm512_setzero_si512(), a_hi = a_lo;
    for (int64_t p = 0; p < t.pairs; ++p) {
      pair32_vnni(t.base + t.off[2 * p] + n0, t.base + t.off[2 * p + 1] + n0,
                  _mm512_set1_epi32(t.w[p]), a_lo, a_hi);
    }
    store32_avx512(a_lo, a_hi, corr, s, o, lo, hi, zy, q + n0);
  }
}

// The in-place form (qdepthwise_reads_in_place): tap offsets from the input
// plane, masked loads (lanes outside the image or past the last output read
// zx; AVX-512 masked loads do not touch masked-out bytes, so nothing outside
// the image is read), and the outputs stored straight into `out`, the last
// chunk masked.
EMBER_QDW_AVX512_VNNI inline __m512i load_pair_in_place(const int8_t* x, int64_t at,
                                                        __mmask32 m, __m256i zx) {
  // The address as an integer: the offset of a tap above or left of the
  // image points before it, which only the masked-out lanes would read.
  const auto* p = reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(x) +
                                                static_cast<uintptr_t>(at));
  return _mm512_cvtepi8_epi16(_mm256_mask_loadu_epi8(zx, m, p));
}

// Requantises 32 outputs into out + n0, masked past n.
EMBER_QDW_AVX512 inline void store32_in_place(__m512i a_lo, __m512i a_hi, __m512i corr, __m512 s,
                                              __m512 o, __m512 lo, __m512 hi, __m512i zy,
                                              int64_t n0, int64_t n, int8_t* out) {
  const __m512i words = _mm512_packs_epi32(requant16_avx512(a_lo, corr, s, o, lo, hi, zy),
                                           requant16_avx512(a_hi, corr, s, o, lo, hi, zy));
  const __m256i bytes = _mm512_cvtepi16_epi8(words);
  if (n - n0 >= kChunk) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + n0), bytes);
  } else {
    _mm256_mask_storeu_epi8(out + n0, static_cast<__mmask32>((uint64_t{1} << (n - n0)) - 1),
                            bytes);
  }
}

// kChunks (1 or 2) chunks from n0 over every pair of taps; kMasked: through
// the chunks' masks (m, m + stride), else plain loads (every tap inside).
template <int kChunks, bool kMasked>
EMBER_QDW_AVX512_VNNI inline void chunks_in_place(const Taps& t, const uint32_t* m,
                                                  int64_t stride, int64_t n0, __m256i zx,
                                                  __m512i (&acc)[2][2]) {
  for (int64_t p = 0; p < t.pairs; ++p) {
    const __m512i w = _mm512_set1_epi32(t.w[p]);
    const int64_t oa = t.off[2 * p] + n0, ob = t.off[2 * p + 1] + n0;
#pragma GCC unroll 2
    for (int h = 0; h < kChunks; ++h) {
      __m512i xa, xb;
      if constexpr (kMasked) {
        xa = load_pair_in_place(t.base, oa + h * kChunk, m[h * stride + 2 * p], zx);
        xb = load_pair_in_place(t.base, ob + h * kChunk, m[h * stride + 2 * p + 1], zx);
      } else {
        xa = _mm512_cvtepi8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.base + oa + h * kChunk)));
        xb = _mm512_cvtepi8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.base + ob + h * kChunk)));
      }
      acc[h][0] = _mm512_dpwssd_epi32(acc[h][0], _mm512_unpacklo_epi16(xa, xb), w);
      acc[h][1] = _mm512_dpwssd_epi32(acc[h][1], _mm512_unpackhi_epi16(xa, xb), w);
    }
  }
}

EMBER_QDW_AVX512_VNNI void compute_in_place_vnni(const Taps& t, const uint32_t* masks, int32_t zx,
                                                 int64_t n, const Requant& r, int8_t* out) {
  const __m512i corr = _mm512_set1_epi32(t.corr), zy = _mm512_set1_epi32(r.zy);
  const __m512 s = _mm512_set1_ps(r.scale), o = _mm512_set1_ps(r.offset);
  const __m512 lo = _mm512_set1_ps(r.lo), hi = _mm512_set1_ps(r.hi);
  const __m256i vzx = _mm256_set1_epi8(static_cast<char>(zx));
  // Per chunk: 2 · pairs masks, then 1 when every tap of the chunk is inside.
  const int64_t stride = 2 * t.pairs + 1;
  int64_t n0 = 0, k = 0;
  // Two chunks per pass over the taps, as compute_avx512_vnni.
  for (; n0 + kChunk < n; n0 += 2 * kChunk, k += 2) {
    __m512i acc[2][2] = {{_mm512_setzero_si512(), _mm512_setzero_si512()},
                         {_mm512_setzero_si512(), _mm512_setzero_si512()}};
    const uint32_t* m = masks + k * stride;
    if (m[stride - 1] != 0 && m[2 * stride - 1] != 0) {
      chunks_in_place<2, false>(t, m, stride, n0, vzx, acc);
    } else {
      chunks_in_place<2, true>(t, m, stride, n0, vzx, acc);
    }
    store32_in_place(acc[0][0], acc[0][1], corr, s, o, lo, hi, zy, n0, n, out);
    store32_in_place(acc[1][0], acc[1][1], corr, s, o, lo, hi, zy, n0 + kChunk, n, out);
  }
  if (n0 < n) {
    __m512i acc[2][2] = {{_mm512_setzero_si512(), _mm512_setzero_si512()},
                         {_mm512_setzero_si512(), _mm512_setzero_si512()}};
    chunks_in_place<1, true>(t, masks + k * stride, stride, n0, vzx, acc);
    store32_in_place(acc[0][0], acc[0][1], corr, s, o, lo, hi, zy, n0, n, out);
  }
}

#endif

// Copies the plane into its phase planes (padding holds zx).
void fill_phases(const QDepthwiseLayout& p, int32_t zx, const int8_t* x, int8_t* phase) {
  const QDepthwiseGeometry& g = p.g;
  const auto pad = static_cast<uint8_t>(zx);
  if (g.sh == 1 && g.sw == 1) {
    // One fill, then the rows over it: a memset call per gap between rows
    // cost more than the copies on 7×7 and 14×14 planes (MobileNetV2's
    // 960-channel layers), and filling bytes the rows overwrite costs less.
    std::memset(phase, pad, static_cast<size_t>(p.plane));
    for (int64_t iy = 0; iy < g.ih; ++iy) {
      portable::copy_row_inline(phase + (iy + g.ph) * p.wp + g.pw, x + iy * g.iw, g.iw);
    }
    return;
  }
  std::memset(phase, pad, static_cast<size_t>(p.plane * g.sh * g.sw));
  // Padded row py = iy + ph goes to phase row py % sh, row py / sh there
  // (counted along, not divided per row).
  int64_t phase_row = g.ph % g.sh, phase_y = g.ph / g.sh;
  for (int64_t iy = 0; iy < g.ih; ++iy) {
    int8_t* base = phase + phase_row * g.sw * p.plane + phase_y * p.wp;
    if (++phase_row == g.sh) {
      phase_row = 0;
      ++phase_y;
    }
    const int8_t* row = x + iy * g.iw;
    if (g.sw == 1) {
      portable::copy_row_inline(base + g.pw, row, g.iw);
      continue;
    }
    // Input column ix lands in phase (ix + pw) % sw at (ix + pw) / sw.
    if (g.sw == 2) {
      deinterleave2(row, g.iw, base + (g.pw % 2) * p.plane + g.pw / 2,
                    base + ((g.pw + 1) % 2) * p.plane + (g.pw + 1) / 2);
      continue;
    }
    for (int64_t px0 = 0; px0 < g.sw; ++px0) {
      const int64_t first = ((px0 - g.pw) % g.sw + g.sw) % g.sw;
      int8_t* d = base + px0 * p.plane + (first + g.pw) / g.sw;
      const int64_t count = first < g.iw ? (g.iw - first + g.sw - 1) / g.sw : 0;
      const int8_t* src = row + first;
      for (int64_t c = 0; c < count; ++c) d[c] = src[c * g.sw];
    }
  }
}

}  // namespace

size_t qdepthwise_weights_bytes(int64_t channels, int64_t taps) {
  return static_cast<size_t>(channels * ((taps + 1) / 2 + 1)) * sizeof(int32_t);
}

QDepthwiseWeights qdepthwise_weights(const int8_t* w, int64_t channels, int64_t taps, int32_t zx,
                                     void* memory) {
  QDepthwiseWeights d;
  d.taps = taps;
  d.pairs = (taps + 1) / 2;
  d.zx = zx;
  auto* pair_w = static_cast<int32_t*>(memory);
  auto* corr = pair_w + channels * d.pairs;
  for (int64_t c = 0; c < channels; ++c) {
    const int8_t* wc = w + c * taps;
    int32_t sum = 0;
    for (int64_t q = 0; q < d.pairs; ++q) {
      const int32_t w0 = wc[2 * q];
      const int32_t w1 = 2 * q + 1 < taps ? wc[2 * q + 1] : 0;
      sum += w0 + w1;
      pair_w[c * d.pairs + q] =
          static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(w0)) |
                               (static_cast<uint32_t>(static_cast<uint16_t>(w1)) << 16));
    }
    corr[c] = zx * sum;
  }
  d.pair_w = pair_w;
  d.corr = corr;
  return d;
}

int64_t qdepthwise_offset_count(const QDepthwiseGeometry& g) { return (g.kh * g.kw + 1) / 2 * 2; }

bool qdepthwise_reads_in_place(const QDepthwiseGeometry& g) {
#if EMBER_ISA_X86
  return qgemm_kind() == QGemmKind::kAvx512Vnni && g.sh == 1 && g.sw == 1 && g.ow == g.iw &&
         g.oh > 0 && g.ow > 0;
#else
  (void)g;
  return false;
#endif
}

int64_t qdepthwise_mask_count(const QDepthwiseGeometry& g) {
  return (g.oh * g.ow + kChunk - 1) / kChunk * (qdepthwise_offset_count(g) + 1);
}

void qdepthwise_in_place_masks(const QDepthwiseGeometry& g, uint32_t* masks) {
  const int64_t n = g.oh * g.ow, taps = g.kh * g.kw, per_chunk = qdepthwise_offset_count(g) + 1;
  for (int64_t n0 = 0, k = 0; n0 < n; n0 += kChunk, ++k) {
    uint32_t* m = masks + k * per_chunk;
    for (int64_t t = 0; t < per_chunk; ++t) m[t] = 0;
    const int64_t n1 = n - n0 < kChunk ? n : n0 + kChunk;
    int64_t oy = n0 / g.ow, ox = n0 - oy * g.ow;
    // Each run of the chunk's outputs on one output row.
    for (int64_t at = n0; at < n1; at += g.ow - ox, ox = 0, ++oy) {
      const int64_t run_end = ox + (n1 - at < g.ow - ox ? n1 - at : g.ow - ox);
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t ky = t / g.kw, kx = t % g.kw;
        const int64_t iy = oy - g.ph + ky * g.dh;
        if (iy < 0 || iy >= g.ih) continue;
        // Columns ox' of this run with 0 <= ox' − pw + kx·dw < iw.
        int64_t c0 = g.pw - kx * g.dw, c1 = g.iw + g.pw - kx * g.dw;
        if (c0 < ox) c0 = ox;
        if (c1 > run_end) c1 = run_end;
        if (c0 >= c1) continue;
        const int64_t first = at - n0 + (c0 - ox), count = c1 - c0;
        const uint32_t bits = count >= 32 ? ~uint32_t{0} : (uint32_t{1} << count) - 1u;
        m[t] |= bits << first;
      }
    }
    // Every tap inside for all 32 outputs: plain loads.
    bool inside = true;
    for (int64_t t = 0; t < taps; ++t) inside = inside && m[t] == ~uint32_t{0};
    m[per_chunk - 1] = inside ? 1u : 0u;
  }
}

QDepthwiseLayout qdepthwise_layout(const QDepthwiseGeometry& g, int64_t* offsets,
                                   const uint32_t* masks) {
  QDepthwiseLayout l;
  l.g = g;
  if (masks != nullptr) {
    l.hp = g.ih;
    l.wp = g.iw;
    l.plane = g.ih * g.iw;
    l.n = g.oh * g.ow;
    const int64_t taps = g.kh * g.kw;
    l.pairs = (taps + 1) / 2;
    l.tap_offset = offsets;
    l.masks = masks;
    if (offsets != nullptr) {
      for (int64_t t = 0; t < 2 * l.pairs; ++t) {
        const int64_t tap = t < taps ? t : 0;  // The zero-weight partner; its mask is 0.
        offsets[t] = ((tap / g.kw) * g.dh - g.ph) * g.iw + (tap % g.kw) * g.dw - g.pw;
      }
    }
    return l;
  }
  const int64_t hpad = g.ih + g.ph + g.pb, wpad = g.iw + g.pw + g.pr;
  l.hp = (hpad + g.sh - 1) / g.sh;
  l.wp = (wpad + g.sw - 1) / g.sw;
  l.n = g.oh * l.wp;
  // The farthest tap reads this far past a flattened output's position, and
  // the last chunk runs up to kChunk − 1 outputs past n.
  const int64_t max_off = ((g.kh - 1) * g.dh / g.sh) * l.wp + ((g.kw - 1) * g.dw) / g.sw;
  l.plane = round_up(l.n, kChunk) + max_off;
  if (l.plane < l.hp * l.wp) l.plane = l.hp * l.wp;
  const int64_t taps = g.kh * g.kw;
  l.pairs = (taps + 1) / 2;
  l.tap_offset = offsets;
  if (offsets != nullptr) {
    for (int64_t t = 0; t < 2 * l.pairs; ++t) {
      const int64_t tap = t < taps ? t : 0;  // An odd count's partner: tap 0, weight 0.
      const int64_t ry = (tap / g.kw) * g.dh, rx = (tap % g.kw) * g.dw;
      offsets[t] = ((ry % g.sh) * g.sw + rx % g.sw) * l.plane + (ry / g.sh) * l.wp + rx / g.sw;
    }
  }
  return l;
}

size_t qdepthwise_scratch_bytes(const QDepthwiseGeometry& g) {
  const QDepthwiseLayout l = qdepthwise_layout(g, nullptr);
  return out_offset(l) + static_cast<size_t>(round_up(l.n, kChunk));
}

void qdepthwise_plane(const QDepthwiseLayout& l, const QDepthwiseWeights& w, int64_t c,
                      const int8_t* x, float scale, float offset, float lo, float hi, int32_t zy,
                      int8_t* out, void* scratch) {
#if EMBER_ISA_X86
  if (l.masks != nullptr) {
    const Taps t{l.pairs, w.pair_w + c * w.pairs, x, l.tap_offset, w.corr[c]};
    compute_in_place_vnni(t, l.masks, w.zx, l.n, Requant{scale, offset, lo, hi, zy}, out);
    return;
  }
#endif
  auto* phase = static_cast<int8_t*>(scratch);
  auto* q = phase + out_offset(l);
  fill_phases(l, w.zx, x, phase);
  const Taps t{l.pairs, w.pair_w + c * w.pairs, phase, l.tap_offset, w.corr[c]};
  const Requant r{scale, offset, lo, hi, zy};
#if EMBER_ISA_X86
  const portable::Isa isa = portable::cpu_isa();
  if (qgemm_kind() == QGemmKind::kAvx512Vnni) {
    compute_avx512_vnni(t, l.n, r, q);
  } else if (isa >= portable::Isa::kAvx512) {
    compute_avx512(t, l.n, r, q);
  } else if (isa >= portable::Isa::kAvx2) {
    compute_avx2(t, l.n, r, q);
  } else {
    compute_baseline(t, l.n, r, q);
  }
#else
  compute_baseline(t, l.n, r, q);
#endif
  for (int64_t oy = 0; oy < l.g.oh; ++oy) {
    portable::copy_row_inline(out + oy * l.g.ow, q + oy * l.wp, l.g.ow);
  }
}

}  // namespace ember::kernels::quantized
