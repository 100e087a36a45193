// aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None,
//                 Tensor(a!) out) -> Tensor(a!)
// Copies self into out, whose dim order (fixed ahead of time) is the memory
// format the program asked for; any dtype, out's dtype must match.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/generated/functions/portable/op_clone.h"

namespace ember::kernels::portable {

void clone_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> memory_format,
               Tensor& out) {
  (void)memory_format;  // Out's dim order already is the format.
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype)) return;
  if (!resize_out(ctx, out, self.shape())) return;
  strided_copy(self, self.strides, out);
}

}  // namespace ember::kernels::portable
