#include "kernels/quantized/util/qweight_gemv.h"

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/isa_target.h"

namespace ember::kernels::quantized {
namespace {

constexpr int kLanes = 16;

inline __attribute__((always_inline)) float group_dot(const float* __restrict x,
                                                      const int8_t* __restrict w, int64_t n,
                                                      float z) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l] * (static_cast<float>(w[i + l]) - z);
  }
  for (int l = 0; i + l < n; ++l) acc[l] += x[i + l] * (static_cast<float>(w[i + l]) - z);
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
  }
  return acc[0];
}

inline __attribute__((always_inline)) void gemv_body(const float* x, const int8_t* w,
                                                     const float* scales, const float* zeros,
                                                     int64_t k, int64_t group, int64_t first,
                                                     int64_t last, const float* bias, float* y) {
  const int64_t groups = k / group;
  for (int64_t r = first; r < last; ++r) {
    const int8_t* wr = w + r * k;
    const float* sr = scales + r * groups;
    const float* zr = zeros != nullptr ? zeros + r * groups : nullptr;
    float sum = 0.0f;
    for (int64_t g = 0; g < groups; ++g) {
      sum += sr[g] * group_dot(x + g * group, wr + g * group, group, zr ? zr[g] : 0.0f);
    }
    y[r] = bias != nullptr ? sum + bias[r] : sum;
  }
}

void gemv_baseline(const float* x, const int8_t* w, const float* s, const float* z, int64_t k,
                   int64_t group, int64_t first, int64_t last, const float* bias, float* y) {
  gemv_body(x, w, s, z, k, group, first, last, bias, y);
}

#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void gemv_avx2(const float* x, const int8_t* w, const float* s,
                                     const float* z, int64_t k, int64_t group, int64_t first,
                                     int64_t last, const float* bias, float* y) {
  gemv_body(x, w, s, z, k, group, first, last, bias, y);
}

EMBER_TARGET_AVX512 void gemv_avx512(const float* x, const int8_t* w, const float* s,
                                     const float* z, int64_t k, int64_t group, int64_t first,
                                     int64_t last, const float* bias, float* y) {
  gemv_body(x, w, s, z, k, group, first, last, bias, y);
}
#endif

}  // namespace

void qweight_gemv(const float* x, const int8_t* w, const float* scales, const float* zeros,
                  int64_t k, int64_t group, int64_t first, int64_t last, const float* bias,
                  float* y) {
#if EMBER_ISA_X86
  const portable::Isa isa = portable::cpu_isa();
  if (isa >= portable::Isa::kAvx512) {
    gemv_avx512(x, w, scales, zeros, k, group, first, last, bias, y);
    return;
  }
  if (isa >= portable::Isa::kAvx2) {
    gemv_avx2(x, w, scales, zeros, k, group, first, last, bias, y);
    return;
  }
#endif
  gemv_baseline(x, w, scales, zeros, k, group, first, last, bias, y);
}

}  // namespace ember::kernels::quantized
