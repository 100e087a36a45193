// aten::sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// Floating dtypes; integral/bool inputs compute
// in float32 (the out dtype must be floating).
#include <cmath>

#include "kernels/portable/util/unary.h"
#include "kernels/generated/functions/portable/op_sin.h"

namespace ember::kernels::portable {
void sin_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_unary_op<kFloating, true>(ctx, self, out, [](auto x) { return std::sin(x); });
}

}  // namespace ember::kernels::portable
