// aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// self [b, m, k], mat2 [b, k, n], out [b, m, n]. Dtypes as aten::mm.out; any
// dim orders. A constant float32 mat2 is packed once, at prepare, one set of
// B panels per batch.
#include "kernels/generated/functions/portable/op_bmm.h"
#include "kernels/portable/util/matmul_out.h"

namespace ember::kernels::portable {

Error bmm_out_prepare(KernelPrepareContext& ctx, const Tensor& self, const Tensor& mat2,
                      Tensor& out) {
  (void)out;
  return prepare_constant_mat2(ctx, self, mat2);
}

void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  matmul_out(ctx, self, mat2, out, 3, prepared_mat2(ctx, mat2));
}

}  // namespace ember::kernels::portable
