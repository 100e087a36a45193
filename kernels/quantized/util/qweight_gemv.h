// The matrix-vector product of a weight-only quantized linear layer
// (op_quantized_linear_weight_only.cpp) for decoding: reads the int8 weight
// directly, so it moves a quarter of a float32 weight's bytes.
#pragma once

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::quantized {

/// y[n] = Σ_g s[n][g] · Σ_{k in g} x[k]·(float(w[n][k]) − z[n][g]) + bias[n]
/// for n in [first, last); w is n × k int8 (row-major), s and z are
/// n × (k / group) (z null: 0), bias may be null. Computed as
/// Σ_g s·(Σ x·w) − Σ_g s·z·(Σ x) in 16 lanes; baseline, AVX2+FMA and AVX-512
/// builds (cpu_isa()) differ only in the last bits (the latter contract into FMAs).
void qweight_gemv(const float* x, const int8_t* w, const float* scales, const float* zeros,
                  int64_t k, int64_t group, int64_t first, int64_t last, const float* bias,
                  float* y);

/// dst[i] = (float(w[i]) − z) · s for i < count: a prompt's GEMM panels,
/// dequantized as they are packed. The same bits on every `isa`.
void qweight_dequantize(const int8_t* w, int64_t count, float z, float s, float* dst,
                        portable::Isa isa = portable::cpu_isa());

}  // namespace ember::kernels::quantized
