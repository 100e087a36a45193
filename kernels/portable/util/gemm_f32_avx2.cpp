// f32_gemm_6x16_avx2_fma: the float GEMM microkernel for CPUs with AVX2 and
// FMA. The build targets baseline x86-64, so this one function is compiled
// for AVX2+FMA through a target attribute and only called after
// cpu_has_avx2_fma() says the CPU runs it (gemm.h). Twelve ymm accumulators
// hold the 6×16 tile; two hold the B row and one the broadcast A value.
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemv.h"
#include "kernels/portable/util/gemv_packed.h"
#include "kernels/portable/util/line_prefetch.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_GEMM_X86 1
#include <immintrin.h>
#else
#define EMBER_GEMM_X86 0
#endif

namespace ember::kernels::portable {

#if EMBER_GEMM_X86

bool cpu_has_avx2_fma() { return cpu_isa() >= Isa::kAvx2; }

// `v`, which the compiler may not fuse into a following add (GCC contracts
// a vector multiply and add into an FMA by default): both microkernels round
// each product, so they give the same bits (gemm_f32_avx512.cpp does the same).
__attribute__((target("avx2,fma"), always_inline)) inline __m256 rounded(__m256 v) {
  asm("" : "+x"(v));
  return v;
}

// One k step of the 6×16 tile.
__attribute__((target("avx2,fma"), always_inline)) inline void step_6x16(const float*& a,
                                                                         const float*& b,
                                                                         __m256 (&acc)[6][2]) {
  const __m256 b0 = _mm256_loadu_ps(b);
  const __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) {
    const __m256 ai = _mm256_broadcast_ss(a + i);
    acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
    acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
  }
  a += 6;
  b += 16;
}

// The 6×16 tile, then alpha·acc + beta·c and, with kEp, the epilogue on the
// registers before the only store (GemmEpilogue::apply's order: row bias,
// column bias, residual, clamp, so the bits are apply's). With kPf, as
// gemm_f32_avx512.cpp's tile: `prefetch_lines` lines from `prefetch`
// requested a group every kPfEvery k steps.
inline constexpr int64_t kPfEvery = 8;

template <bool kEp, bool kPf = false>
__attribute__((target("avx2,fma"), always_inline)) inline void tile_6x16(
    int64_t kc, const float* a, const float* b, float* c, int64_t c_rs, float alpha, float beta,
    const GemmEpilogue<float>* ep, const char* prefetch = nullptr, int64_t prefetch_lines = 0) {
  __m256 acc[6][2];
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) {
    acc[i][0] = _mm256_setzero_ps();
    acc[i][1] = _mm256_setzero_ps();
  }
  int64_t p = 0;
  if constexpr (kPf) {
    LinePrefetch<> pf(prefetch, prefetch_lines, kc / kPfEvery);
    for (; p + kPfEvery <= kc; p += kPfEvery) {
      pf.step();
#pragma GCC unroll 8
      for (int u = 0; u < kPfEvery; ++u) step_6x16(a, b, acc);
    }
  }
  for (; p < kc; ++p) step_6x16(a, b, acc);
  const __m256 va = _mm256_set1_ps(alpha);
  const __m256 vb = _mm256_set1_ps(beta);
  float* r[6] = {c, c + c_rs, c + 2 * c_rs, c + 3 * c_rs, c + 4 * c_rs, c + 5 * c_rs};
#pragma GCC unroll 6
  for (int i = 0; i < 6; ++i) {
    __m256 v0 = rounded(_mm256_mul_ps(va, acc[i][0]));
    __m256 v1 = rounded(_mm256_mul_ps(va, acc[i][1]));
    if (beta != 0.0f) {
      // alpha·acc + beta·c, each product rounded (no fused multiply-add here).
      v0 = _mm256_add_ps(v0, rounded(_mm256_mul_ps(vb, _mm256_loadu_ps(r[i]))));
      v1 = _mm256_add_ps(v1, rounded(_mm256_mul_ps(vb, _mm256_loadu_ps(r[i] + 8))));
    }
    if constexpr (kEp) {
      if (ep->row_bias != nullptr) {
        const __m256 rb = _mm256_set1_ps(ep->row_bias[i * ep->bias_stride]);
        v0 = _mm256_add_ps(v0, rb);
        v1 = _mm256_add_ps(v1, rb);
      }
      if (ep->col_bias != nullptr) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(ep->col_bias));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(ep->col_bias + 8));
      }
      if (ep->residual != nullptr) {
        const float* res = ep->residual + i * ep->res_rs;
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(res));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(res + 8));
      }
      if (ep->clamp) {
        const __m256 lo = _mm256_set1_ps(ep->lo), hi = _mm256_set1_ps(ep->hi);
        v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0));
        v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
      }
    }
    _mm256_storeu_ps(r[i], v0);
    _mm256_storeu_ps(r[i] + 8, v1);
  }
}

__attribute__((target("avx2,fma"))) void f32_gemm_6x16_avx2_fma(int64_t kc, const float* a,
                                                                const float* b, float* c,
                                                                int64_t c_rs, float alpha,
                                                                float beta) {
  tile_6x16<false>(kc, a, b, c, c_rs, alpha, beta, nullptr);
}

__attribute__((target("avx2,fma"))) void f32_gemm_6x16_avx2_fma_ep(
    int64_t kc, const float* a, const float* b, float* c, int64_t c_rs, float alpha, float beta,
    const GemmEpilogue<float>& ep) {
  tile_6x16<true>(kc, a, b, c, c_rs, alpha, beta, &ep);
}

__attribute__((target("avx2,fma"))) void f32_gemm_6x16_avx2_fma_pf(
    int64_t kc, const float* a, const float* b, float* c, int64_t c_rs, float alpha, float beta,
    const GemmEpilogue<float>* ep, const void* prefetch, int64_t prefetch_lines) {
  const char* pf = static_cast<const char*>(prefetch);
  if (ep != nullptr) {
    tile_6x16<true, true>(kc, a, b, c, c_rs, alpha, beta, ep, pf, prefetch_lines);
  } else {
    tile_6x16<false, true>(kc, a, b, c, c_rs, alpha, beta, nullptr, pf, prefetch_lines);
  }
}

// One 16-column panel for kM rows: tile_6x16's chains (two ymm per row).
template <int kM>
__attribute__((target("avx2,fma"), always_inline)) inline void panel_sums_16(
    int64_t kc, const float* a, int64_t a_rs, int64_t a_cs, const float* b, float* acc) {
  __m256 s0[kM], s1[kM];
#pragma GCC unroll 4
  for (int i = 0; i < kM; ++i) {
    s0[i] = _mm256_setzero_ps();
    s1[i] = _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 4
    for (int i = 0; i < kM; ++i) {
      const __m256 ai = _mm256_set1_ps(a[i * a_rs + p * a_cs]);
      s0[i] = _mm256_fmadd_ps(ai, b0, s0[i]);
      s1[i] = _mm256_fmadd_ps(ai, b1, s1[i]);
    }
    b += 16;
  }
#pragma GCC unroll 4
  for (int i = 0; i < kM; ++i) {
    _mm256_store_ps(acc + i * 16, s0[i]);
    _mm256_store_ps(acc + i * 16 + 8, s1[i]);
  }
}

__attribute__((target("avx2,fma"))) void f32_panel_sums_16_avx2_fma(int64_t m, int64_t kc,
                                                                   const float* a, int64_t a_rs,
                                                                   int64_t a_cs,
                                                                   const float* panel,
                                                                   float* acc) {
  switch (m) {
    case 1: panel_sums_16<1>(kc, a, a_rs, a_cs, panel, acc); break;
    case 2: panel_sums_16<2>(kc, a, a_rs, a_cs, panel, acc); break;
    case 3: panel_sums_16<3>(kc, a, a_rs, a_cs, panel, acc); break;
    default: panel_sums_16<4>(kc, a, a_rs, a_cs, panel, acc); break;
  }
}

__attribute__((target("avx2,fma"))) void f32_gemv_rows_avx2_fma(
    int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
    int64_t b_rs, float alpha, float beta, float* c, int64_t c_rs, int64_t c_cs) {
  gemv_detail::rows_of_b_m<float>(m, n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs);
}

#else

bool cpu_has_avx2_fma() { return false; }

void f32_panel_sums_16_avx2_fma(int64_t, int64_t, const float*, int64_t, int64_t, const float*,
                                float*) {}

void f32_gemv_rows_avx2_fma(int64_t, int64_t, int64_t, const float*, int64_t, int64_t,
                            const float*, int64_t, float, float, float*, int64_t, int64_t) {}

void f32_gemm_6x16_avx2_fma(int64_t, const float*, const float*, float*, int64_t, float, float) {}

void f32_gemm_6x16_avx2_fma_pf(int64_t, const float*, const float*, float*, int64_t, float, float,
                               const GemmEpilogue<float>*, const void*, int64_t) {}

void f32_gemm_6x16_avx2_fma_ep(int64_t, const float*, const float*, float*, int64_t, float, float,
                               const GemmEpilogue<float>&) {}

#endif

}  // namespace ember::kernels::portable
