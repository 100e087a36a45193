// aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
// Broadcasting, type promotion, all dtypes (bool: logical and).
#include "kernels/portable/util/binary_driver.h"
#include "kernels/generated/functions/portable/op_mul.h"

namespace ember::kernels::portable {

void mul_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {
  binary_tensor_out<kAllTypes, false>(ctx, self, other, out,
                                      [](auto x, auto y) { return wrap_mul(x, y); });
}

}  // namespace ember::kernels::portable
