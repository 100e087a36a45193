// The builds of unary_f32 (see unary_f32.h). One loop template, inlined
// into a baseline function and into functions compiled for AVX2+FMA and
// AVX-512 (isa_target.h): GCC and Clang inline the always_inline math of
// fast_math.h into each and vectorise for that function's ISA.
#include "kernels/portable/util/unary_f32.h"

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/isa_target.h"

namespace ember::kernels::portable {
namespace {

template <UnaryF32 kOp>
[[gnu::always_inline]] inline float apply(float v) {
  if constexpr (kOp == UnaryF32::Exp) return fast_expf(v);
  else if constexpr (kOp == UnaryF32::Expm1) return fast_expm1f(v);
  else if constexpr (kOp == UnaryF32::Sigmoid) return fast_sigmoidf(v);
  else if constexpr (kOp == UnaryF32::Tanh) return fast_tanhf(v);
  else if constexpr (kOp == UnaryF32::Erf) return fast_erff(v);
  else if constexpr (kOp == UnaryF32::GeluErf) return fast_gelu_erff(v);
  else return fast_gelu_tanhf(v);
}

template <UnaryF32 kOp>
[[gnu::always_inline]] inline void span(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = apply<kOp>(x[i]);
}

// The switch sits outside the loops so each loop is specialised.
[[gnu::always_inline]] inline void dispatch(UnaryF32 op, const float* x, float* y, int64_t n) {
  switch (op) {
    case UnaryF32::Exp: span<UnaryF32::Exp>(x, y, n); break;
    case UnaryF32::Expm1: span<UnaryF32::Expm1>(x, y, n); break;
    case UnaryF32::Sigmoid: span<UnaryF32::Sigmoid>(x, y, n); break;
    case UnaryF32::Tanh: span<UnaryF32::Tanh>(x, y, n); break;
    case UnaryF32::Erf: span<UnaryF32::Erf>(x, y, n); break;
    case UnaryF32::GeluErf: span<UnaryF32::GeluErf>(x, y, n); break;
    case UnaryF32::GeluTanh: span<UnaryF32::GeluTanh>(x, y, n); break;
  }
}

[[gnu::always_inline]] inline void rows(UnaryF32 op, float* c, int64_t rs, int64_t m,
                                        int64_t n) {
  for (int64_t i = 0; i < m; ++i) dispatch(op, c + i * rs, c + i * rs, n);
}

#if EMBER_ISA_X86
EMBER_TARGET_AVX2_FMA void unary_f32_avx2(UnaryF32 op, const float* x, float* y, int64_t n) {
  dispatch(op, x, y, n);
}
EMBER_TARGET_AVX512 void unary_f32_avx512(UnaryF32 op, const float* x, float* y, int64_t n) {
  dispatch(op, x, y, n);
}
EMBER_TARGET_AVX2_FMA void rows_avx2(UnaryF32 op, float* c, int64_t rs, int64_t m, int64_t n) {
  rows(op, c, rs, m, n);
}
EMBER_TARGET_AVX512 void rows_avx512(UnaryF32 op, float* c, int64_t rs, int64_t m, int64_t n) {
  rows(op, c, rs, m, n);
}
#endif

}  // namespace

void unary_f32_baseline(UnaryF32 op, const float* x, float* y, int64_t n) {
  dispatch(op, x, y, n);
}

void unary_f32_at(Isa isa, UnaryF32 op, const float* x, float* y, int64_t n) {
#if EMBER_ISA_X86
  if (isa >= Isa::kAvx512) {
    unary_f32_avx512(op, x, y, n);
    return;
  }
  if (isa >= Isa::kAvx2) {
    unary_f32_avx2(op, x, y, n);
    return;
  }
#else
  (void)isa;
#endif
  unary_f32_baseline(op, x, y, n);
}

void unary_f32_rows(UnaryF32 op, float* c, int64_t rs, int64_t m, int64_t n) {
#if EMBER_ISA_X86
  const Isa isa = cpu_isa();
  if (isa >= Isa::kAvx512) {
    rows_avx512(op, c, rs, m, n);
    return;
  }
  if (isa >= Isa::kAvx2) {
    rows_avx2(op, c, rs, m, n);
    return;
  }
#endif
  rows(op, c, rs, m, n);
}

bool unary_f32_uses_avx2() { return EMBER_ISA_X86 && cpu_isa() >= Isa::kAvx2; }

void unary_f32(UnaryF32 op, const float* x, float* y, int64_t n) {
  unary_f32_at(cpu_isa(), op, x, y, n);
}

}  // namespace ember::kernels::portable
