// Float32 transcendental loops over contiguous spans, in two builds: the
// baseline one (SSE2 on x86-64, whatever the target has elsewhere) and, on
// x86-64 CPUs with AVX2 and FMA, the same source compiled for them (8 lanes
// and fused multiply-adds: about 3× the SSE2 loop). The kernels call
// unary_f32() once per dense span instead of looping themselves, so the
// choice of build is made once per call, never per element.
#pragma once

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::portable {

/// The float32 functions of fast_math.h that have a span loop.
enum class UnaryF32 : uint8_t { Exp, Expm1, Sigmoid, Tanh, Erf, GeluErf, GeluTanh };

/// y[i] = op(x[i]) for i < n. x == y is allowed (in place); other overlaps
/// are not. Never fails.
void unary_f32(UnaryF32 op, const float* x, float* y, int64_t n);

/// c[i·rs + j] = op(c[i·rs + j]) for i < m, j < n, in place: a GEMM tile's
/// activation (gemm_epilogue.h), the build chosen once for the block.
void unary_f32_rows(UnaryF32 op, float* c, int64_t rs, int64_t m, int64_t n);

/// The baseline build of unary_f32, whatever the CPU (tests compare it with
/// the AVX2 one).
void unary_f32_baseline(UnaryF32 op, const float* x, float* y, int64_t n);

/// The build for `isa` (capped to what this binary has; the caller makes sure
/// the host runs it: tests compare the builds of one host).
void unary_f32_at(Isa isa, UnaryF32 op, const float* x, float* y, int64_t n);

/// True when unary_f32 runs the AVX2+FMA build on this CPU.
bool unary_f32_uses_avx2();

}  // namespace ember::kernels::portable
