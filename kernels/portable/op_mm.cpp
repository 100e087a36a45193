// aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// self [m, k], mat2 [k, n], out [m, n]. All three share one dtype:
// float32/float64 (blocked GEMM), float16/bfloat16 (float accumulation) or an
// integral type (wrapping). Any dim orders. A constant float32 mat2 is packed
// once, at prepare, into the GEMM's B panels.
#include "kernels/generated/functions/portable/op_mm.h"
#include "kernels/portable/util/matmul_out.h"

namespace ember::kernels::portable {

Error mm_out_prepare(KernelPrepareContext& ctx, const Tensor& self, const Tensor& mat2,
                     Tensor& out) {
  (void)out;
  return prepare_constant_mat2(ctx, self, mat2);
}

void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  matmul_out(ctx, self, mat2, out, 2, prepared_mat2(ctx, mat2));
}

}  // namespace ember::kernels::portable
