// aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// args: self [m, k], mat2 [k, n], out [m, n], out(return). All three share one
// dtype: float32/float64 (blocked GEMM), float16/bfloat16 (float accumulation)
// or an integral type (wrapping). Any dim orders.
#include "kernels/portable/util/matmul_out.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void mm_out(KernelContext& ctx, EValue** args) { matmul_out(ctx, args, 2); }

}  // namespace

EMBER_REGISTER_KERNEL("aten::mm.out", mm_out, 4);

}  // namespace ember::kernels::portable
