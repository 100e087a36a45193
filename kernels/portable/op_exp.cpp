// aten::exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// aten::expm1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// Floating dtypes; integral and bool inputs
// compute in float32 (out must be floating). float32 (and the 16-bit floats,
// which compute in float32) use the vectorisable polynomials of fast_math.h
// (exp ≤ 1 ulp, expm1 ≤ 1.5 ulp); double calls libm. float32 tensors with
// one layout run through unary_f32 (AVX2 where the CPU has it).
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_exp.h"

namespace ember::kernels::portable {
void exp_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kFloating, true>(ctx, self, out, UnaryF32::Exp, [](auto x) {
    if constexpr (std::is_same_v<decltype(x), float>) return fast_expf(x);
    else return std::exp(x);
  });
}

void expm1_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kFloating, true>(ctx, self, out, UnaryF32::Expm1, [](auto x) {
    if constexpr (std::is_same_v<decltype(x), float>) return fast_expm1f(x);
    else return std::expm1(x);
  });
}

}  // namespace ember::kernels::portable
