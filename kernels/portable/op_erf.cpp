// aten::erf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// Floating dtypes; integral and bool inputs
// compute in float32 (out must be floating). float32 (and the 16-bit floats,
// which compute in float32) use fast_erff of fast_math.h (≤ 1.5 ulp; float32
// tensors with one layout run through unary_f32, AVX2 where the CPU has it);
// double calls libm.
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_erf.h"

namespace ember::kernels::portable {
void erf_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kFloating, true>(ctx, self, out, UnaryF32::Erf, [](auto x) {
    if constexpr (std::is_same_v<decltype(x), float>) return fast_erff(x);
    else return std::erf(x);
  });
}

}  // namespace ember::kernels::portable
