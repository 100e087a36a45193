// GEMM for m ≤ 4 rows (GEMV when m == 1): a classifier head or one token
// through a Linear layer. The blocked `gemm` would pad m to its tile and pack
// all of B for a product that touches each element of B only m times, so this
// path streams B once, straight from the caller's memory:
//   - B row-contiguous (cs == 1): C rows accumulate in a stack chunk while
//     rows of B stream past, four at a time;
//   - B column-contiguous (rs == 1, e.g. a transposed weight): each C element
//     is a dot product of two contiguous runs, with eight partial sums so the
//     compiler vectorises it.
// Same contract as `gemm` (gemm.h); float and double.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/gemm.h"

namespace ember::kernels::portable {

inline constexpr int64_t kGemvMaxM = 4;

/// Columns a thread's share of a small-m product is a multiple of (matmul.h).
/// A column's sum does not depend on where its share starts: the row stream
/// runs the same loop over any 64-column-aligned range.
inline constexpr int64_t kGemvSplit = 64;

/// The row-contiguous-B stream below compiled for AVX2+FMA
/// (gemm_f32_avx2.cpp); only when cpu_has_avx2_fma(), 1 ≤ m ≤ kGemvMaxM.
void f32_gemv_rows_avx2_fma(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs,
                            int64_t a_cs, const float* b, int64_t b_rs, float alpha, float beta,
                            float* c, int64_t c_rs, int64_t c_cs);

/// The same stream compiled for AVX-512 (gemm_f32_avx512.cpp; the AVX2
/// build's bits); only when cpu_has_avx512f(), 1 ≤ m ≤ kGemvMaxM.
void f32_gemv_rows_avx512f(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_rs,
                           int64_t a_cs, const float* b, int64_t b_rs, float alpha, float beta,
                           float* c, int64_t c_rs, int64_t c_cs);

namespace gemv_detail {

template <typename T>
inline void store(T* c, T v, T alpha, T beta) {
  *c = beta == T(0) ? alpha * v : alpha * v + beta * *c;
}

// B row-contiguous: acc[i][0..nb) += sum_p A[i][p] · B[p][j0..j0+nb).
// Chunks of up to 32 KiB of accumulators: a decoding step's linear layers
// (2048 to 5632 columns) then stream their weight front to back, 13–15%
// faster than in 2 KiB pieces per row (the hardware prefetcher follows one
// sequential run per row better than hundreds of short ones).
// Always inlined so that gemm_f32_avx2.cpp can compile it for AVX2.
template <typename T, int kM>
[[gnu::always_inline]] inline void rows_of_b(int64_t n, int64_t k, const T* a, int64_t a_rs,
                                             int64_t a_cs, const T* b, int64_t b_rs, T alpha,
                                             T beta, T* c, int64_t c_rs, int64_t c_cs) {
  constexpr int64_t kNB = 32768 / static_cast<int64_t>(sizeof(T)) / kM / 64 * 64;  // 32 KiB
  alignas(64) T acc[kM][kNB];
  for (int64_t j0 = 0; j0 < n; j0 += kNB) {
    const int64_t nb = n - j0 < kNB ? n - j0 : kNB;
    for (int i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < nb; ++j) acc[i][j] = T(0);
    }
    int64_t p = 0;
    for (; p + 4 <= k; p += 4) {
      const T* r0 = b + p * b_rs + j0;
      const T* r1 = r0 + b_rs;
      const T* r2 = r1 + b_rs;
      const T* r3 = r2 + b_rs;
      for (int i = 0; i < kM; ++i) {
        const T* ai = a + i * a_rs + p * a_cs;
        const T a0 = ai[0], a1 = ai[a_cs], a2 = ai[2 * a_cs], a3 = ai[3 * a_cs];
        T* __restrict acc_i = acc[i];
        for (int64_t j = 0; j < nb; ++j) {
          acc_i[j] += a0 * r0[j] + a1 * r1[j] + a2 * r2[j] + a3 * r3[j];
        }
      }
    }
    for (; p < k; ++p) {
      const T* r0 = b + p * b_rs + j0;
      for (int i = 0; i < kM; ++i) {
        const T a0 = a[i * a_rs + p * a_cs];
        T* __restrict acc_i = acc[i];
        for (int64_t j = 0; j < nb; ++j) acc_i[j] += a0 * r0[j];
      }
    }
    for (int i = 0; i < kM; ++i) {
      T* ci = c + i * c_rs + j0 * c_cs;
      for (int64_t j = 0; j < nb; ++j) store(ci + j * c_cs, acc[i][j], alpha, beta);
    }
  }
}

// rows_of_b for a run-time m in [1, kGemvMaxM]; always inlined so that each
// ISA build (gemm_f32_avx2.cpp, gemm_f32_avx512.cpp) compiles its own copy.
template <typename T>
[[gnu::always_inline]] inline void rows_of_b_m(int64_t m, int64_t n, int64_t k, const T* a,
                                               int64_t a_rs, int64_t a_cs, const T* b,
                                               int64_t b_rs, T alpha, T beta, T* c, int64_t c_rs,
                                               int64_t c_cs) {
  switch (m) {
    case 1: rows_of_b<T, 1>(n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs); break;
    case 2: rows_of_b<T, 2>(n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs); break;
    case 3: rows_of_b<T, 3>(n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs); break;
    default: rows_of_b<T, 4>(n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs); break;
  }
}

// Sum of x[p]·y[p] over p < k, both contiguous.
template <typename T>
inline T dot(int64_t k, const T* __restrict x, const T* __restrict y) {
  T s[8] = {};
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    for (int q = 0; q < 8; ++q) s[q] += x[p + q] * y[p + q];
  }
  T tail = T(0);
  for (; p < k; ++p) tail += x[p] * y[p];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])) + tail;
}

}  // namespace gemv_detail

/// True when gemm_small_m takes these sizes and strides.
inline bool gemm_small_m_takes(int64_t m, int64_t n, int64_t k, int64_t a_cs, int64_t b_rs,
                               int64_t b_cs) {
  return m >= 1 && m <= kGemvMaxM && n >= 1 && k >= 1 &&
         (b_cs == 1 || n == 1 || (b_rs == 1 && a_cs == 1));
}

/// C[m×n] = alpha·A·B + beta·C for 1 ≤ m ≤ kGemvMaxM. Returns false (and
/// does nothing) when B is neither row- nor column-contiguous, or a size is
/// zero; the caller then uses `gemm`.
template <typename T>
bool gemm_small_m(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_rs, int64_t a_cs,
                  const T* b, int64_t b_rs, int64_t b_cs, T alpha, T beta, T* c, int64_t c_rs,
                  int64_t c_cs) {
  if (!gemm_small_m_takes(m, n, k, a_cs, b_rs, b_cs)) return false;
  // A single column of B needs no contiguity: the row stream reads one element a row.
  if (b_cs == 1 || n == 1) {
    if constexpr (std::is_same_v<T, float>) {
      if (cpu_has_avx512f()) {
        f32_gemv_rows_avx512f(m, n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs);
        return true;
      }
      if (cpu_has_avx2_fma()) {
        f32_gemv_rows_avx2_fma(m, n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs);
        return true;
      }
    }
    gemv_detail::rows_of_b_m<T>(m, n, k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, c_cs);
    return true;
  }
  if (b_rs == 1 && a_cs == 1) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        gemv_detail::store(c + i * c_rs + j * c_cs,
                           gemv_detail::dot(k, a + i * a_rs, b + j * b_cs), alpha, beta);
      }
    }
    return true;
  }
  return false;
}

}  // namespace ember::kernels::portable
