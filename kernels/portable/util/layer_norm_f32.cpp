// The two builds of layer_norm_row_f32 (see layer_norm_f32.h): one always-
// inline body, compiled baseline and under target("avx2").
#include "kernels/portable/util/layer_norm_f32.h"

#include <cmath>

#include "kernels/portable/util/gemm.h"  // cpu_has_avx2_fma

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_LN_X86 1
#define EMBER_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define EMBER_LN_X86 0
#endif

namespace ember::kernels::portable {
namespace {

constexpr int kLanes = 16;

// Sum of f(x[i]) over 16 independent lanes (vectorises without
// reassociating a single chain), lanes merged pairwise, then the tail.
template <typename F>
[[gnu::always_inline]] inline float lane_sum(const float* x, int64_t n, F f) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) acc[k] += f(x[i + k]);
  }
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += f(x[i]);
  return acc[0] + tail;
}

[[gnu::always_inline]] inline void row(const float* x, int64_t n, double eps, const float* w,
                                       const float* b, float* y, float* mean_out,
                                       float* rstd_out) {
  const float mean = lane_sum(x, n, [](float v) { return v; }) / static_cast<float>(n);
  const float sq = lane_sum(x, n, [mean](float v) {
    const float d = v - mean;
    return d * d;
  });
  const double var = static_cast<double>(sq) / static_cast<double>(n);
  const float rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
  *mean_out = mean;
  *rstd_out = rstd;
  if (w != nullptr && b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i] + b[i];
  } else if (w != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i];
  } else if (b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd + b[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd;
  }
}

#if EMBER_LN_X86
EMBER_TARGET_AVX2 void row_avx2(const float* x, int64_t n, double eps, const float* w,
                                const float* b, float* y, float* mean, float* rstd) {
  row(x, n, eps, w, b, y, mean, rstd);
}
#endif

}  // namespace

void layer_norm_row_f32_baseline(const float* x, int64_t n, double eps, const float* w,
                                 const float* b, float* y, float* mean, float* rstd) {
  row(x, n, eps, w, b, y, mean, rstd);
}

void layer_norm_row_f32(const float* x, int64_t n, double eps, const float* w, const float* b,
                        float* y, float* mean, float* rstd) {
#if EMBER_LN_X86
  if (cpu_has_avx2_fma()) {
    row_avx2(x, n, eps, w, b, y, mean, rstd);
    return;
  }
#endif
  row(x, n, eps, w, b, y, mean, rstd);
}

}  // namespace ember::kernels::portable
