// aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// args: self, other, out, out(return). Broadcasting, type promotion, all
// dtypes (bool: logical and).
#include "kernels/portable/util/binary_driver.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void mul_out(KernelContext& ctx, EValue** args) {
  binary_tensor_out<kAllTypes, false>(ctx, args, [](auto x, auto y) { return wrap_mul(x, y); });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::mul.out", mul_out, 4);

}  // namespace ember::kernels::portable
