// aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// args: self [b, m, k], mat2 [b, k, n], out [b, m, n], out(return). Dtypes as
// aten::mm.out; any dim orders.
#include "kernels/portable/util/matmul_out.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void bmm_out(KernelContext& ctx, EValue** args) { matmul_out(ctx, args, 3); }

}  // namespace

EMBER_REGISTER_KERNEL("aten::bmm.out", bmm_out, 4);

}  // namespace ember::kernels::portable
