// Float32 RMS norm of one row (ember_fused::rms_norm, op_rms_norm.cpp):
// y = (x · r) · w with r = 1 / sqrt(Σ x² / n + eps), in three builds of one
// source: baseline (SSE2 on x86-64), AVX2 and AVX-512. None of them
// contracts into FMAs, and the sum of squares runs in 16 float32 lanes
// merged pairwise in every build, so all three give the same bits (tests
// compare them). A row at any stride takes the same order in plain loops.
#pragma once

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::portable {

/// y[i·ys] = (x[i·xs] · r) · w[i] for i < n (n >= 1; w null: no weight),
/// r = 1 / sqrt(float(Σ x²) / n + eps). With xs == ys == 1 the build of
/// `isa` runs; other strides the plain loop (the same bits).
void rms_norm_row_f32(const float* x, int64_t xs, int64_t n, float eps, const float* w,
                      float* y, int64_t ys, Isa isa = cpu_isa());

}  // namespace ember::kernels::portable
