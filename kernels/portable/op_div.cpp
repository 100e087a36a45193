// aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// args: self, other, out, out(return). True division: integral and bool
// inputs divide in float32 (so out must be floating); x/0 gives ±inf or NaN.
#include "kernels/portable/util/binary_driver.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void div_out(KernelContext& ctx, EValue** args) {
  binary_tensor_out<kFloating, true>(ctx, args, [](auto x, auto y) { return x / y; });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::div.out", div_out, 4);

}  // namespace ember::kernels::portable
