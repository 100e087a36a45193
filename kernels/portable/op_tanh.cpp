// aten::tanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// args: self, out, out(return). Floating dtypes; integral/bool inputs compute
// in float32 (the out dtype must be floating). float32 (and the 16-bit floats,
// which compute in float32) use the vectorisable polynomial of fast_math.h
// (≤ 3 ulp sigmoid, ≤ 2.5 ulp tanh); double calls libm. float32 tensors with
// one layout run through unary_f32 (AVX2 where the CPU has it).
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/unary.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void tanh_out(KernelContext& ctx, EValue** args) {
  run_unary_op<kFloating, true>(ctx, args, UnaryF32::Tanh, [](auto x) {
    if constexpr (std::is_same_v<decltype(x), float>) return fast_tanhf(x);
    else return std::tanh(x);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::tanh.out", tanh_out, 3);

}  // namespace ember::kernels::portable
