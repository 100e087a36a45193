// aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// self [b, m, k], mat2 [b, k, n], out [b, m, n]. Dtypes as aten::mm.out; any
// dim orders.
#include "kernels/generated/kernel_functions.h"
#include "kernels/portable/util/matmul_out.h"

namespace ember::kernels::portable {

void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  matmul_out(ctx, self, mat2, out, 3);
}

}  // namespace ember::kernels::portable
