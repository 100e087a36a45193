// Float32 rotary position embedding of one row (ember_fused::rope,
// op_rope.cpp), in the half-split form transformers' Llama family uses
// (rotate_half): with h = n / 2,
//   y[i] = x[i]·cos[i] + (−x[i + h])·sin[i]   for i < h
//   y[i] = x[i]·cos[i] + x[i − h]·sin[i]      for i ≥ h
// Each product and the sum round once, as the op-by-op graph does (no FMA
// contraction in any build), so the result has eager's bits. Baseline, AVX2
// and AVX-512 builds of one source.
#pragma once

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::portable {

/// y[i·ys] for i < n (n even) from x at stride xs, cos and sin at stride cs
/// (0: one value for the row). All strides 1: the build of `isa`; else the
/// plain loop (the same bits). y must not overlap x.
void rope_row_f32(const float* x, int64_t xs, const float* cos, const float* sin, int64_t cs,
                  int64_t n, float* y, int64_t ys, Isa isa = cpu_isa());

}  // namespace ember::kernels::portable
