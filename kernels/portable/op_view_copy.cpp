// aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
// Copies self into out in row-major logical order; one size may be -1. Any
// dtype; out's dtype must match.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/generated/functions/portable/op_view_copy.h"

namespace ember::kernels::portable {

void view_copy_out(KernelContext& ctx, const Tensor& self, IntSpan size, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype)) return;
  int32_t shape[kTensorMaxDim];
  if (!infer_view_sizes(ctx, size, self.numel, "size", shape)) return;
  if (!resize_out(ctx, out, {shape, size.size()})) return;
  reshape_copy(self, out);
}

}  // namespace ember::kernels::portable
