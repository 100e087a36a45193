// aten::relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// args: self, out, out(return). Floating and integral dtypes (not bool, as in
// PyTorch); NaN stays NaN.
#include "kernels/portable/util/unary.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void relu_out(KernelContext& ctx, EValue** args) {
  run_unary_op<kRealTypes, false>(ctx, args, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(0) : x;
  });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::relu.out", relu_out, 3);

}  // namespace ember::kernels::portable
