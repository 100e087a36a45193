// aten::tanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// args: self, out, out(return). Floating dtypes; integral/bool inputs compute
// in float32 (the out dtype must be floating).
#include <cmath>

#include "kernels/portable/util/unary.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void tanh_out(KernelContext& ctx, EValue** args) {
  run_unary_op<kFloating, true>(ctx, args, [](auto x) { return std::tanh(x); });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::tanh.out", tanh_out, 3);

}  // namespace ember::kernels::portable
