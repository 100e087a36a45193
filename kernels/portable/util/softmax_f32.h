// Float32 softmax and log-softmax over one dim of a dense block, in the two
// builds of unary_f32.h (baseline, and AVX2+FMA when the CPU has it).
#pragma once

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::portable {

/// Softmax (log = false) or log-softmax over the middle dim of a dense
/// [outer, n, inner] float32 block: element (o, i, j) at o·n·inner + i·inner + j,
/// the same layout for `in` and `out` (in == out is allowed). inner == 1 is a
/// row per o; inner > 1 sweeps the reduced dim once per block of 64 columns,
/// reading unit-stride rows. Numerically stable (the max is subtracted before
/// exp); a NaN, +inf or all -inf slice gives NaN outputs, as in eager.
/// n ≥ 1. Never fails.
void softmax_f32(bool log, const float* in, float* out, int64_t outer, int64_t n, int64_t inner);

/// The baseline build of softmax_f32, whatever the CPU (for tests).
void softmax_f32_baseline(bool log, const float* in, float* out, int64_t outer, int64_t n,
                          int64_t inner);

/// The build for `isa` (as unary_f32_at).
void softmax_f32_at(Isa isa, bool log, const float* in, float* out, int64_t outer, int64_t n,
                    int64_t inner);

/// softmax_f32 (not log) except that a slice whose values are all -inf
/// gives zeros instead of NaN: aten::_safe_softmax, what SDPA's math form
/// computes (a query row that may attend to nothing). in == out is allowed.
void safe_softmax_f32(const float* in, float* out, int64_t outer, int64_t n, int64_t inner);

/// The build for `isa` (for tests).
void safe_softmax_f32_at(Isa isa, const float* in, float* out, int64_t outer, int64_t n,
                         int64_t inner);

}  // namespace ember::kernels::portable
