// The builds of rms_norm_row_f32 (rms_norm_f32.h): one always-inline body,
// compiled baseline, under target("avx2") and under target("avx512f"), with
// contraction off (so no FMA: the same bits everywhere).
#include "kernels/portable/util/rms_norm_f32.h"

#include <cmath>

// target("avx512f") implies FMA: keep GCC from contracting v·v + acc.
#pragma GCC optimize("fp-contract=off")

namespace ember::kernels::portable {
namespace {

constexpr int kLanes = 16;

// Σ x² in 16 lanes (lane k takes i ≡ k mod 16 of the whole blocks), the
// lanes merged pairwise, then the tail in order.
template <bool kUnit>
[[gnu::always_inline]] inline float sum_of_squares(const float* x, int64_t xs, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      const float v = x[(kUnit ? i + k : (i + k) * xs)];
      acc[k] += v * v;
    }
  }
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) acc[k] += acc[k + width];
  }
  float tail = 0.0f;
  for (; i < n; ++i) {
    const float v = x[kUnit ? i : i * xs];
    tail += v * v;
  }
  return acc[0] + tail;
}

template <bool kUnit>
[[gnu::always_inline]] inline void row(const float* x, int64_t xs, int64_t n, float eps,
                                       const float* w, float* y, int64_t ys) {
  // As eager: mean in float32, + eps, then 1 / sqrt (aten's rsqrt).
  const float mean = sum_of_squares<kUnit>(x, xs, n) / static_cast<float>(n);
  const float r = 1.0f / std::sqrt(mean + eps);
  if (w != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[kUnit ? i : i * ys] = x[kUnit ? i : i * xs] * r * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[kUnit ? i : i * ys] = x[kUnit ? i : i * xs] * r;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_RMS_X86 1
__attribute__((target("avx2"))) void row_avx2(const float* x, int64_t n, float eps,
                                              const float* w, float* y) {
  row<true>(x, 1, n, eps, w, y, 1);
}

__attribute__((target("avx512f,prefer-vector-width=512"))) void row_avx512(
    const float* x, int64_t n, float eps, const float* w, float* y) {
  row<true>(x, 1, n, eps, w, y, 1);
}
#else
#define EMBER_RMS_X86 0
#endif

}  // namespace

void rms_norm_row_f32(const float* x, int64_t xs, int64_t n, float eps, const float* w,
                      float* y, int64_t ys, Isa isa) {
  if (xs != 1 || ys != 1) {
    row<false>(x, xs, n, eps, w, y, ys);
    return;
  }
#if EMBER_RMS_X86
  if (isa >= Isa::kAvx512) {
    row_avx512(x, n, eps, w, y);
    return;
  }
  if (isa >= Isa::kAvx2) {
    row_avx2(x, n, eps, w, y);
    return;
  }
#else
  (void)isa;
#endif
  row<true>(x, 1, n, eps, w, y, 1);
}

}  // namespace ember::kernels::portable
