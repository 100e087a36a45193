// The two builds of cascade_sum.h's order. One loop template over GCC/Clang
// vector types (a 256-bit vector of W lanes), inlined into a baseline
// function (two 128-bit halves per vector) and into one compiled with
// target("avx2"). No multiply is involved, so there is nothing to contract
// into FMA: both builds give the same bits.
#include "kernels/portable/util/cascade_sum.h"

#include <cstring>

#include "kernels/portable/util/gemm.h"  // cpu_has_avx2_fma

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_CASCADE_X86 1
#define EMBER_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define EMBER_CASCADE_X86 0
#endif

namespace ember::kernels::portable {
namespace {

constexpr int64_t kChunk = 16;  // Blocks per cascade level.

template <typename T>
struct Lanes {
  static constexpr int W = static_cast<int>(32 / sizeof(T));
  using Vec [[gnu::vector_size(32)]] = T;
};

// acc += the W values at p (unaligned). Takes the vector by reference:
// returning a 256-bit vector by value would change the ABI between builds.
template <typename T>
[[gnu::always_inline]] inline void add_loaded(typename Lanes<T>::Vec& acc, const T* p) {
  typename Lanes<T>::Vec v;
  std::memcpy(&v, p, sizeof(v));
  acc += v;
}

// One block of four vectors: accumulator j takes vector j.
template <typename T>
[[gnu::always_inline]] inline void add_block(typename Lanes<T>::Vec& a0, typename Lanes<T>::Vec& a1,
                                             typename Lanes<T>::Vec& a2, typename Lanes<T>::Vec& a3,
                                             const T* q) {
  constexpr int W = Lanes<T>::W;
  add_loaded<T>(a0, q);
  add_loaded<T>(a1, q + W);
  add_loaded<T>(a2, q + 2 * W);
  add_loaded<T>(a3, q + 3 * W);
}

// Blocks [0, blocks) of p with the cascade: every kChunk blocks the
// accumulators are added into level 0 and cleared, every kChunk carries into
// level 0 it is added into level 1 and cleared, and so on; at the end the
// levels are added into the accumulators from the lowest up.
template <typename T>
[[gnu::always_inline]] inline void add_blocks_cascaded(
    typename Lanes<T>::Vec& a0, typename Lanes<T>::Vec& a1, typename Lanes<T>::Vec& a2,
    typename Lanes<T>::Vec& a3, const T* p, int64_t blocks) {
  using Vec = typename Lanes<T>::Vec;
  constexpr int64_t kBlock = 4 * Lanes<T>::W;
  constexpr int kLevels = 16;  // 16^16 chunks: more than any int64 row.
  const Vec zero = {};
  Vec levels[kLevels][4];
  int64_t carries[kLevels] = {};  // Carries into each level since it was cleared.
  int used_levels = 0;
  for (int64_t b0 = 0; b0 < blocks; b0 += kChunk) {
    const int64_t b1 = blocks - b0 < kChunk ? blocks : b0 + kChunk;
    for (int64_t b = b0; b < b1; ++b) add_block<T>(a0, a1, a2, a3, p + b * kBlock);
    if (b1 - b0 < kChunk) break;
    Vec from[4] = {a0, a1, a2, a3};
    a0 = a1 = a2 = a3 = zero;
    for (int level = 0; level < kLevels; ++level) {
      if (level == used_levels) {
        for (Vec& v : levels[level]) v = zero;
        ++used_levels;
      }
      for (int j = 0; j < 4; ++j) levels[level][j] += from[j];
      if (++carries[level] < kChunk || level + 1 == kLevels) break;
      carries[level] = 0;
      for (int j = 0; j < 4; ++j) {
        from[j] = levels[level][j];
        levels[level][j] = zero;
      }
    }
  }
  for (int level = 0; level < used_levels; ++level) {
    a0 += levels[level][0];
    a1 += levels[level][1];
    a2 += levels[level][2];
    a3 += levels[level][3];
  }
}

template <typename T>
[[gnu::always_inline]] inline T row_sum(const T* p, int64_t n) {
  using Vec = typename Lanes<T>::Vec;
  constexpr int W = Lanes<T>::W;
  constexpr int kAccs = 4;
  constexpr int64_t kBlock = kAccs * W;

  if (n < W) {
    T sum = T(0);
    if (W == 8 && n >= 4) {
      sum += p[0];
      for (int64_t i = 4; i < n; ++i) sum += p[i];
      return ((sum + p[1]) + p[2]) + p[3];
    }
    for (int64_t i = 0; i < n; ++i) sum += p[i];
    return sum;
  }

  const Vec zero = {};
  Vec a0 = zero, a1 = zero, a2 = zero, a3 = zero;
  const int64_t vectors = n / W;
  const int64_t blocks = vectors / kAccs;
  if (blocks < kChunk) {
    // The common case (spatial means, rows under 512 floats): no cascade.
    for (int64_t b = 0; b < blocks; ++b) add_block<T>(a0, a1, a2, a3, p + b * kBlock);
  } else {
    add_blocks_cascaded<T>(a0, a1, a2, a3, p, blocks);
  }
  for (int64_t v = blocks * kAccs; v < vectors; ++v) add_loaded<T>(a0, p + v * W);
  a0 += a1;
  a0 += a2;
  a0 += a3;
  if (const int64_t tail_start = vectors * W; tail_start < n) {
    T tail = T(0);
    for (int64_t i = tail_start; i < n; ++i) tail += p[i];
    a0[0] += tail;
  }
  T sum = T(0);
  for (int k = 0; k < W; ++k) sum += a0[k];
  return sum;
}

template <typename T>
[[gnu::always_inline]] inline void rows_sum(const T* in, int64_t n, int64_t rows,
                                            int64_t in_stride, T* out, int64_t out_stride,
                                            bool mean) {
  const T count = static_cast<T>(n);
  for (int64_t i = 0; i < rows; ++i) {
    const T sum = row_sum(in + i * in_stride, n);
    out[i * out_stride] = mean ? sum / count : sum;
  }
}

#if EMBER_CASCADE_X86
EMBER_TARGET_AVX2 float row_sum_avx2(const float* p, int64_t n) { return row_sum(p, n); }
EMBER_TARGET_AVX2 double row_sum_avx2(const double* p, int64_t n) { return row_sum(p, n); }
template <typename T>
EMBER_TARGET_AVX2 void rows_sum_avx2(const T* in, int64_t n, int64_t rows, int64_t in_stride,
                                     T* out, int64_t out_stride, bool mean) {
  rows_sum(in, n, rows, in_stride, out, out_stride, mean);
}
#endif

template <typename T>
T dispatch_row(const T* p, int64_t n) {
#if EMBER_CASCADE_X86
  if (cpu_has_avx2_fma()) return row_sum_avx2(p, n);
#endif
  return row_sum(p, n);
}

template <typename T>
void dispatch_rows(const T* in, int64_t n, int64_t rows, int64_t in_stride, T* out,
                   int64_t out_stride, bool mean) {
#if EMBER_CASCADE_X86
  if (cpu_has_avx2_fma()) {
    rows_sum_avx2(in, n, rows, in_stride, out, out_stride, mean);
    return;
  }
#endif
  rows_sum(in, n, rows, in_stride, out, out_stride, mean);
}

}  // namespace

float cascade_sum_row(const float* p, int64_t n) { return dispatch_row(p, n); }
float cascade_sum_row_baseline(const float* p, int64_t n) { return row_sum(p, n); }
double cascade_sum_row_baseline(const double* p, int64_t n) { return row_sum(p, n); }
double cascade_sum_row(const double* p, int64_t n) { return dispatch_row(p, n); }

void cascade_sum_rows(const float* in, int64_t n, int64_t rows, int64_t in_stride, float* out,
                      int64_t out_stride, bool mean) {
  dispatch_rows(in, n, rows, in_stride, out, out_stride, mean);
}
void cascade_sum_rows(const double* in, int64_t n, int64_t rows, int64_t in_stride, double* out,
                      int64_t out_stride, bool mean) {
  dispatch_rows(in, n, rows, in_stride, out, out_stride, mean);
}

}  // namespace ember::kernels::portable
