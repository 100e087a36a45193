// qs8_gemm_8x32_avx512vnni: the int8 GEMM microkernel for CPUs with
// AVX-512 VNNI. VPDPBUSD multiplies 4 unsigned activation bytes by 4 signed
// weight bytes and adds the four products into one int32 lane, so one
// instruction does 64 multiply-adds. Activations arrive as x + 128 (uint8)
// and the epilogue subtracts Σ_k w · (128 + zx) per row (qgemm.h). Sixteen
// zmm accumulators hold the 8×32 tile; two hold the activation groups, one
// the broadcast weight group.
#include "kernels/quantized/util/qgemm.h"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "kernels/portable/util/amx_block.h"
#define EMBER_QGEMM_VNNI 1
// GCC 12's AVX-512 conversion, min and max intrinsics start from
// _mm512_undefined_ps(), which -Wmaybe-uninitialized reports as a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#else
#define EMBER_QGEMM_VNNI 0
#endif

namespace ember::kernels::quantized::qgemm_detail {

#if EMBER_QGEMM_VNNI

// The 8×32 tile's sums over kg groups of 4 k: sixteen zmm accumulators,
// two activation vectors and one broadcast weight group. Group g's
// activations are at b + g·128, or with kAt at b + boff[g] (the implicit
// convolution, qconv_implicit.h). The accumulators are named variables, not
// an array: GCC keeps an array of vectors in registers only partly and
// copies (even spills) it every iteration, which halved the kernel's rate.
// With `init` (8 values), row i's sums start from init[i] instead of 0 (the
// epilogue's per-row correction, one broadcast per row instead of an add
// per vector).
template <bool kAt>
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void dot_tile(
    int64_t kg, const int8_t* a, const uint8_t* b, const int64_t* boff, __m512i (&c)[8][2],
    const int32_t* init = nullptr) {
#define EMBER_VNNI_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define EMBER_VNNI_ZERO(i)                                                               \
  __m512i c##i##0 = init != nullptr ? _mm512_set1_epi32(init[i]) : _mm512_setzero_si512(), \
          c##i##1 = c##i##0;
  EMBER_VNNI_ROWS(EMBER_VNNI_ZERO)
  for (int64_t g = 0; g < kg; ++g) {
    // The weight strip streams from L3 or memory when the layer's weights
    // outgrow L2 and few column strips reuse each (small images): fetch
    // 16 groups (512 bytes) ahead.
    _mm_prefetch(reinterpret_cast<const char*>(a) + 512, _MM_HINT_T0);
    const uint8_t* bg = kAt ? b + boff[g] : b;
    const __m512i b0 = _mm512_loadu_si512(bg);
    const __m512i b1 = _mm512_loadu_si512(bg + 64);
#define EMBER_VNNI_ROW(i)                                  \
  {                                                        \
    int32_t quad;                                          \
    __builtin_memcpy(&quad, a + (i) * 4, sizeof(quad));    \
    const __m512i ai = _mm512_set1_epi32(quad);            \
    c##i##0 = _mm512_dpbusd_epi32(c##i##0, b0, ai);        \
    c##i##1 = _mm512_dpbusd_epi32(c##i##1, b1, ai);        \
  }
    EMBER_VNNI_ROWS(EMBER_VNNI_ROW)
    a += 32;
    if (!kAt) b += 128;
  }
#define EMBER_VNNI_OUT(i) c[i][0] = c##i##0; c[i][1] = c##i##1;
  EMBER_VNNI_ROWS(EMBER_VNNI_OUT)
#undef EMBER_VNNI_OUT
#undef EMBER_VNNI_ROW
#undef EMBER_VNNI_ZERO
#undef EMBER_VNNI_ROWS
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void qs8_gemm_8x32_avx512vnni(
    int64_t kg, const int8_t* a, const uint8_t* b, int32_t* acc) {
  __m512i c[8][2];
  dot_tile<false>(kg, a, b, nullptr, c);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    _mm512_storeu_si512(acc + i * 32, c[i][0]);
    _mm512_storeu_si512(acc + i * 32 + 16, c[i][1]);
  }
}

// The per-row corrections (zshift · Σ_k W) the sums start from.
struct RowCorrections {
  int32_t v[8];
};

inline RowCorrections row_corrections(const QTileStore& t, int rows) {
  RowCorrections r{};
  for (int i = 0; i < rows; ++i) r.v[i] = t.zshift * t.row_sums[i];
  return r;
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"), always_inline)) inline void
requant_store(const __m512i (&c)[8][2], const QTileStore& t, int rows, int cols) {
  // The epilogue of store_tile, in the same float operations (a product and
  // a sum, no fused multiply-add); CVTPS2DQ rounds half to even like the
  // magic-number rounding there, once the value is clamped. The sums
  // already hold the row's correction (dot_tile's init).
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512 lo = _mm512_set1_ps(t.lo), hi = _mm512_set1_ps(t.hi);
  const __m512i zp = _mm512_set1_epi16(static_cast<int16_t>(t.zp));
  // After the two packs, 128-bit lane L holds columns 4L..4L+3 of the first
  // half, then of the second, as dwords 4L and 4L + 1: this puts them in order.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __mmask32 keep = cols >= 32 ? ~__mmask32(0) : (__mmask32(1) << cols) - 1u;
  for (int i = 0; i < rows; ++i) {
    const __m512 s = _mm512_set1_ps(t.scale[i] * t.scale_mul);
    const __m512 o = _mm512_set1_ps(t.offset != nullptr ? t.offset[i] : 0.0f);
    __m512i q[2];
    for (int h = 0; h < 2; ++h) {
      __m512 v = _mm512_cvtepi32_ps(c[i][h]);
      // Explicit rounding forms: GCC contracts a plain mul and add into an
      // FMA here (AVX-512F implies FMA), which would round differently.
      v = _mm512_add_round_ps(_mm512_mul_round_ps(v, s, kRound), o, kRound);
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      q[h] = _mm512_cvtps_epi32(v);  // In [lo − zp, hi − zp]: int16 holds it.
    }
    // In int16 the zero point is one add for both halves; the values end in
    // [lo, hi], so neither saturating pack changes them.
    const __m512i words = _mm512_add_epi16(_mm512_packs_epi32(q[0], q[1]), zp);
    const __m512i bytes = _mm512_permutexvar_epi32(order, _mm512_packs_epi16(words, words));
    _mm256_mask_storeu_epi8(t.c + i * t.c_rs, keep, _mm512_castsi512_si256(bytes));
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void
qs8_gemm_8x32_avx512vnni_requant(int64_t kg, const int8_t* a, const uint8_t* b,
                                 const QTileStore& t, int rows, int cols) {
  __m512i c[8][2];
  const RowCorrections init = row_corrections(t, rows);
  dot_tile<false>(kg, a, b, nullptr, c, init.v);
  requant_store(c, t, rows, cols);
}

// kAmx's tile (qgemm.h): tiles 0–3 accumulate the 32×32 sums (rows 0–15 /
// 16–31 × columns 0–15 / 16–31), 4–5 hold a chunk's two weight tiles (16
// rows × 64 k, 1 KiB apart), 6–7 its activation tiles (16 groups of a
// 32-column strip: rows 128 bytes apart). TDPBSUD: signed × unsigned bytes,
// VPDPBUSD's products with the operands' roles swapped.
EMBER_TARGET_AMX void qs8_gemm_32x32_amx(int64_t kg, const int8_t* a, const uint8_t* b,
                                         int32_t* acc) {
  // A chunk is 16 groups: 2 KiB of weights (two 1 KiB A tiles) and of a
  // strip's activations.
  portable::amx_block_32x32<portable::AmxProduct::kS8U8>(
      kg / 16, [a](int64_t i) { return a + i * 2048; }, 64, 1024,
      [b](int64_t i) { return b + i * 2048; }, 128, acc, 128, false);
}

EMBER_TARGET_AMX void qs8_gemm_32x32_amx_at(int64_t kg, const int8_t* a, const uint8_t* b,
                                            const int64_t* boff, int64_t group_stride,
                                            int32_t* acc) {
  portable::amx_block_32x32<portable::AmxProduct::kS8U8>(
      kg / 16, [a](int64_t i) { return a + i * 2048; }, 64, 1024,
      [b, boff](int64_t i) { return b + boff[16 * i]; }, group_stride, acc, 128, false);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void store_rows_int8_avx512(
    const int32_t* acc, const QTileStore& t, int rows, int cols) {
  for (int r = 0; r < rows; r += 8) {
    const int n = rows - r < 8 ? rows - r : 8;
    QTileStore part = t;
    part.scale += r;
    if (part.offset != nullptr) part.offset += r;
    part.row_sums += r;
    part.c += r * t.c_rs;
    __m512i c[8][2];
    for (int i = 0; i < 8; ++i) {
      const __m512i corr = _mm512_set1_epi32(i < n ? t.zshift * part.row_sums[i] : 0);
      c[i][0] = _mm512_add_epi32(_mm512_load_si512(acc + (r + i) * 32), corr);
      c[i][1] = _mm512_add_epi32(_mm512_load_si512(acc + (r + i) * 32 + 16), corr);
    }
    requant_store(c, part, n, cols);
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void
qs8_gemm_8x32_avx512vnni_at_requant(int64_t kg, const int8_t* a, const uint8_t* b,
                                    const int64_t* boff, const QTileStore& t, int rows,
                                    int cols) {
  __m512i c[8][2];
  const RowCorrections init = row_corrections(t, rows);
  dot_tile<true>(kg, a, b, boff, c, init.v);
  requant_store(c, t, rows, cols);
}

// Per k group: 4 channel rows of 32 bytes → 32 groups of 4 as uint8. The
// 256-bit unpacks work within 128-bit lanes, so the four results hold
// columns (0–3, 16–19), (4–7, 20–23), (8–11, 24–27), (12–15, 28–31) and two
// lane permutes put them in order: 24 instructions per group where the SSE2
// interleave4_x32_u8 takes 40, in a loop with nothing else in it.
__attribute__((target("avx2"), always_inline)) inline void interleave4_x32_avx2(
    __m256i r0, __m256i r1, __m256i r2, __m256i r3, uint8_t* dst) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  r0 = _mm256_xor_si256(r0, flip);
  r1 = _mm256_xor_si256(r1, flip);
  r2 = _mm256_xor_si256(r2, flip);
  r3 = _mm256_xor_si256(r3, flip);
  const __m256i a = _mm256_unpacklo_epi8(r0, r1), b = _mm256_unpackhi_epi8(r0, r1);
  const __m256i c = _mm256_unpacklo_epi8(r2, r3), e = _mm256_unpackhi_epi8(r2, r3);
  const __m256i p0 = _mm256_unpacklo_epi16(a, c), p1 = _mm256_unpackhi_epi16(a, c);
  const __m256i p2 = _mm256_unpacklo_epi16(b, e), p3 = _mm256_unpackhi_epi16(b, e);
  auto* out = reinterpret_cast<__m256i*>(dst);
  _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(p0, p1, 0x20));
  _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(p2, p3, 0x20));
  _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(p0, p1, 0x31));
  _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(p2, p3, 0x31));
}

__attribute__((target("avx2"))) void pack_planes4_x32_vnni(const int8_t* x, int64_t plane,
                                                            int64_t groups, int cols, int8_t pad,
                                                            uint8_t* dst) {
  if (cols >= 32) {
    for (int64_t g = 0; g < groups; ++g) {
      const int8_t* r = x + 4 * g * plane;
      interleave4_x32_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r)),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + plane)),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 2 * plane)),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 3 * plane)),
                           dst + 128 * g);
    }
    return;
  }
  // A strip's last columns (a 7×7 or 14×14 image's): each row's `cols`
  // bytes through a buffer whose other bytes hold the pad (their outputs
  // are dropped). Before, these strips took the general window packing,
  // k rows one at a time, which doubled a 7×7 layer's time.
  alignas(32) int8_t rows[4][32];
  std::memset(rows, static_cast<uint8_t>(pad), sizeof(rows));
  for (int64_t g = 0; g < groups; ++g) {
    const int8_t* r = x + 4 * g * plane;
    for (int t = 0; t < 4; ++t) std::memcpy(rows[t], r + t * plane, static_cast<size_t>(cols));
    interleave4_x32_avx2(_mm256_load_si256(reinterpret_cast<const __m256i*>(rows[0])),
                         _mm256_load_si256(reinterpret_cast<const __m256i*>(rows[1])),
                         _mm256_load_si256(reinterpret_cast<const __m256i*>(rows[2])),
                         _mm256_load_si256(reinterpret_cast<const __m256i*>(rows[3])),
                         dst + 128 * g);
  }
}

#else

void pack_planes4_x32_vnni(const int8_t*, int64_t, int64_t, int, int8_t, uint8_t*) {}
void qs8_gemm_8x32_avx512vnni(int64_t, const int8_t*, const uint8_t*, int32_t*) {}
void qs8_gemm_32x32_amx(int64_t, const int8_t*, const uint8_t*, int32_t*) {}
void qs8_gemm_32x32_amx_at(int64_t, const int8_t*, const uint8_t*, const int64_t*, int64_t,
                           int32_t*) {}
void store_rows_int8_avx512(const int32_t*, const QTileStore&, int, int) {}
void qs8_gemm_8x32_avx512vnni_requant(int64_t, const int8_t*, const uint8_t*, const QTileStore&,
                                      int, int) {}
void qs8_gemm_8x32_avx512vnni_at_requant(int64_t, const int8_t*, const uint8_t*, const int64_t*,
                                         const QTileStore&, int, int) {}

#endif

}  // namespace ember::kernels::quantized::qgemm_detail
