// f32_gemm_8x32_avx512f: the float GEMM microkernel for CPUs with AVX-512.
// Compiled for AVX-512F through a target attribute (the build targets
// baseline x86-64) and only called after cpu_has_avx512f() says the CPU runs
// it (gemm.h). Sixteen zmm accumulators hold the 8×32 tile; two hold the B
// row and one the broadcast A value.
//
// Each C element is the same chain of fused multiply-adds over p, from zero,
// as in f32_gemm_6x16_avx2_fma, and alpha·acc + beta·c is rounded the same
// way, so both microkernels give the same bits (tested): the tile only
// changes which elements are computed together.
//
// 8×32 rather than a taller tile: convolution's m is the output channels and
// a linear layer's n its features, mostly multiples of 8 and 32, so edge
// tiles are rare; on a core with two 512-bit FMA ports 16 independent
// accumulators cover the FMA latency, and two vector loads plus eight
// broadcasts per sixteen FMAs stay under the load ports' rate.
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemv.h"
#include "kernels/portable/util/gemv_packed.h"
#include "kernels/portable/util/line_prefetch.h"
#include "kernels/portable/util/isa_target.h"

// GCC 12's AVX-512 min/max intrinsics start from _mm512_undefined_ps(), which
// -Wmaybe-uninitialized reports as a false positive (gemm_epilogue_f32.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_GEMM_AVX512 1
#include <immintrin.h>
#else
#define EMBER_GEMM_AVX512 0
#endif

namespace ember::kernels::portable {

#if EMBER_GEMM_AVX512

bool cpu_has_avx512f() { return cpu_isa() >= Isa::kAvx512; }

// `v`, which the compiler may not fuse into a following add (GCC contracts
// a vector multiply and add into an FMA by default): both microkernels round
// each product, so they give the same bits (gemm_f32_avx2.cpp does the same).
__attribute__((target("avx512f"), always_inline)) inline __m512 rounded(__m512 v) {
  asm("" : "+v"(v));
  return v;
}

// The 8×32 tile, then alpha·acc + beta·c and, with kEp, the epilogue on the
// registers before the only store (GemmEpilogue::apply's order: row bias,
// column bias, residual, clamp, so the bits are apply's).
// With kPf, `prefetch_lines` cache lines from `prefetch` are requested
// spread over the k loop, a few every kPfEvery steps (line_prefetch.h; every
// 4 or 16 steps measured 3–5% slower on BERT).
inline constexpr int64_t kPfEvery = 8;

// One k step of the 8×32 tile.
__attribute__((target("avx512f"), always_inline)) inline void step_8x32(const float*& a,
                                                                        const float*& b,
                                                                        __m512 (&acc)[8][2]) {
  const __m512 b0 = _mm512_loadu_ps(b);
  const __m512 b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    const __m512 ai = _mm512_set1_ps(a[i]);
    acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
    acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
  }
  a += 8;
  b += 32;
}

template <bool kEp, bool kPf = false>
__attribute__((target("avx512f"), always_inline)) inline void tile_8x32(
    int64_t kc, const float* a, const float* b, float* c, int64_t c_rs, float alpha, float beta,
    const GemmEpilogue<float>* ep, const char* prefetch = nullptr, int64_t prefetch_lines = 0) {
  __m512 acc[8][2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    acc[i][0] = _mm512_setzero_ps();
    acc[i][1] = _mm512_setzero_ps();
  }
  int64_t p = 0;
  if constexpr (kPf) {
    LinePrefetch<> pf(prefetch, prefetch_lines, kc / kPfEvery);
    for (; p + kPfEvery <= kc; p += kPfEvery) {
      pf.step();
#pragma GCC unroll 8
      for (int u = 0; u < kPfEvery; ++u) step_8x32(a, b, acc);
    }
  }
  for (; p < kc; ++p) step_8x32(a, b, acc);
  const __m512 va = _mm512_set1_ps(alpha);
  const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    float* r = c + i * c_rs;
    __m512 v0 = rounded(_mm512_mul_ps(va, acc[i][0]));
    __m512 v1 = rounded(_mm512_mul_ps(va, acc[i][1]));
    if (beta != 0.0f) {
      // alpha·acc + beta·c, each product rounded (no fused multiply-add here).
      v0 = _mm512_add_ps(v0, rounded(_mm512_mul_ps(vb, _mm512_loadu_ps(r))));
      v1 = _mm512_add_ps(v1, rounded(_mm512_mul_ps(vb, _mm512_loadu_ps(r + 16))));
    }
    if constexpr (kEp) {
      if (ep->row_bias != nullptr) {
        const __m512 rb = _mm512_set1_ps(ep->row_bias[i * ep->bias_stride]);
        v0 = _mm512_add_ps(v0, rb);
        v1 = _mm512_add_ps(v1, rb);
      }
      if (ep->col_bias != nullptr) {
        v0 = _mm512_add_ps(v0, _mm512_loadu_ps(ep->col_bias));
        v1 = _mm512_add_ps(v1, _mm512_loadu_ps(ep->col_bias + 16));
      }
      if (ep->residual != nullptr) {
        const float* res = ep->residual + i * ep->res_rs;
        v0 = _mm512_add_ps(v0, _mm512_loadu_ps(res));
        v1 = _mm512_add_ps(v1, _mm512_loadu_ps(res + 16));
      }
      if (ep->clamp) {
        const __m512 lo = _mm512_set1_ps(ep->lo), hi = _mm512_set1_ps(ep->hi);
        v0 = _mm512_min_ps(hi, _mm512_max_ps(lo, v0));
        v1 = _mm512_min_ps(hi, _mm512_max_ps(lo, v1));
      }
    }
    _mm512_storeu_ps(r, v0);
    _mm512_storeu_ps(r + 16, v1);
  }
}

__attribute__((target("avx512f"))) void f32_gemm_8x32_avx512f(int64_t kc, const float* a,
                                                              const float* b, float* c,
                                                              int64_t c_rs, float alpha,
                                                              float beta) {
  tile_8x32<false>(kc, a, b, c, c_rs, alpha, beta, nullptr);
}

__attribute__((target("avx512f"))) void f32_gemm_8x32_avx512f_ep(
    int64_t kc, const float* a, const float* b, float* c, int64_t c_rs, float alpha, float beta,
    const GemmEpilogue<float>& ep) {
  tile_8x32<true>(kc, a, b, c, c_rs, alpha, beta, &ep);
}

__attribute__((target("avx512f"))) void f32_gemm_8x32_avx512f_pf(
    int64_t kc, const float* a, const float* b, float* c, int64_t c_rs, float alpha, float beta,
    const GemmEpilogue<float>* ep, const void* prefetch, int64_t prefetch_lines) {
  const char* pf = static_cast<const char*>(prefetch);
  if (ep != nullptr) {
    tile_8x32<true, true>(kc, a, b, c, c_rs, alpha, beta, ep, pf, prefetch_lines);
  } else {
    tile_8x32<false, true>(kc, a, b, c, c_rs, alpha, beta, nullptr, pf, prefetch_lines);
  }
}

// One 32-column panel for kM rows: tile_8x32's chains (two zmm per row).
template <int kM>
__attribute__((target("avx512f"), always_inline)) inline void panel_sums_32(
    int64_t kc, const float* a, int64_t a_rs, int64_t a_cs, const float* b, float* acc) {
  __m512 s0[kM], s1[kM];
#pragma GCC unroll 4
  for (int i = 0; i < kM; ++i) {
    s0[i] = _mm512_setzero_ps();
    s1[i] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 4
    for (int i = 0; i < kM; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i * a_rs + p * a_cs]);
      s0[i] = _mm512_fmadd_ps(ai, b0, s0[i]);
      s1[i] = _mm512_fmadd_ps(ai, b1, s1[i]);
    }
    b += 32;
  }
#pragma GCC unroll 4
  for (int i = 0; i < kM; ++i) {
    _mm512_store_ps(acc + i * 32, s0[i]);
    _mm512_store_ps(acc + i * 32 + 16, s1[i]);
  }
}

__attribute__((target("avx512f"))) void f32_panel_sums_32_avx512f(int64_t m, int64_t kc,
                                                                  const float* a, int64_t a_rs,
                                                                  int64_t a_cs,
                                                                  const float* panel, float* acc) {
  switch (m) {
    case 1: panel_sums_32<1>(kc, a, a_rs, a_cs, panel, acc); break;
    case 2: panel_sums_32<2>(kc, a, a_rs, a_cs, panel, acc); break;
    case 3: panel_sums_32<3>(kc, a, a_rs, a_cs, panel, acc); break;
    default: panel_sums_32<4>(kc, a, a_rs, a_cs, panel, acc); break;
  }
}

EMBER_TARGET_AVX512 void f32_gemv_rows_avx512f(int64_t m, int64_t n, int64_t k, const float* a,
                                               int64_t a_rs, int64_t a_cs, const float* b,
                                               int64_t b_rs, float alpha, float beta, float* c,
                                               int64_t c_rs, int64_t c_cs) {
  gemv_detail::rows_of_b_m<float>(m, n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs);
}

#else

bool cpu_has_avx512f() { return false; }

void f32_panel_sums_32_avx512f(int64_t, int64_t, const float*, int64_t, int64_t, const float*,
                               float*) {}

void f32_gemv_rows_avx512f(int64_t, int64_t, int64_t, const float*, int64_t, int64_t,
                           const float*, int64_t, float, float, float*, int64_t, int64_t) {}

void f32_gemm_8x32_avx512f(int64_t, const float*, const float*, float*, int64_t, float, float) {}

void f32_gemm_8x32_avx512f_ep(int64_t, const float*, const float*, float*, int64_t, float, float,
                              const GemmEpilogue<float>&) {}

void f32_gemm_8x32_avx512f_pf(int64_t, const float*, const float*, float*, int64_t, float, float,
                              const GemmEpilogue<float>*, const void*, int64_t) {}

#endif

}  // namespace ember::kernels::portable
