// aten::sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// args: self, out, out(return). Floating dtypes; integral/bool inputs compute
// in float32 (the out dtype must be floating).
#include <cmath>

#include "kernels/portable/util/unary.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void sigmoid_out(KernelContext& ctx, EValue** args) {
  run_unary_op<kFloating, true>(ctx, args, [](auto x) { return 1 / (1 + std::exp(-x)); });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::sigmoid.out", sigmoid_out, 3);

}  // namespace ember::kernels::portable
