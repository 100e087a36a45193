// aten::sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// Floating dtypes; integral/bool inputs compute
// in float32 (the out dtype must be floating). float32 (and the 16-bit floats,
// which compute in float32) use the vectorisable polynomial of fast_math.h
// (≤ 3 ulp sigmoid, ≤ 2.5 ulp tanh); double calls libm. float32 tensors with
// one layout run through unary_f32 (AVX2 where the CPU has it).
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_sigmoid.h"

namespace ember::kernels::portable {
void sigmoid_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kFloating, true>(ctx, self, out, UnaryF32::Sigmoid, [](auto x) {
    if constexpr (std::is_same_v<decltype(x), float>) return fast_sigmoidf(x);
    else return 1 / (1 + std::exp(-x));
  });
}

}  // namespace ember::kernels::portable
