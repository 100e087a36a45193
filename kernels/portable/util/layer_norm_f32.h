// Float32 layer norm of one contiguous row, in two builds like unary_f32.h:
// the baseline (SSE2 on x86-64) and, on CPUs with AVX2, the same source
// compiled for it. The AVX2 build enables no FMA, so nothing is contracted
// and both builds give the same bits (tests compare them).
//
// Statistics accumulate in float32 over 16 lanes, in two passes (mean, then
// the mean of squared deviations): unlike a one-pass sum of squares this
// does not cancel catastrophically when |mean| >> std. rstd is computed in
// float64 from them. This is the transformer hot path; strided rows and the
// other dtypes use the generic float64 kernel (op_layer_norm.cpp).
#pragma once

#include <cstdint>

namespace ember::kernels::portable {

/// y = (x - mean) * rstd * w + b over x[0 .. n) (n >= 1), with w and b
/// optional (null), mean = sum(x) / n and rstd = 1 / sqrt(var + eps) with the
/// biased variance. y may alias x.
void layer_norm_row_f32(const float* x, int64_t n, double eps, const float* w, const float* b,
                        float* y, float* mean, float* rstd);

/// The baseline build, whatever the CPU (tests compare it with the above).
void layer_norm_row_f32_baseline(const float* x, int64_t n, double eps, const float* w,
                                 const float* b, float* y, float* mean, float* rstd);

}  // namespace ember::kernels::portable
