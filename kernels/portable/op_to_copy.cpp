// aten::_to_copy.out(Tensor self, *, bool non_blocking=False,
//                    MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
// Converts self to out's dtype (any pair of supported dtypes; float → int
// truncates toward zero, → bool is `!= 0`) and out's dim order.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/generated/functions/portable/op_to_copy.h"

namespace ember::kernels::portable {

void _to_copy_out(KernelContext& ctx, const Tensor& self, bool non_blocking,
                  std::optional<int64_t> memory_format, Tensor& out) {
  (void)non_blocking;
  (void)memory_format;  // Out's dim order already is the format.
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out")) return;
  if (!resize_out(ctx, out, self.shape())) return;
  strided_copy(self, self.strides, out);
}

}  // namespace ember::kernels::portable
