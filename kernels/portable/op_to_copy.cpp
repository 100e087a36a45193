// aten::_to_copy.out(Tensor self, *, bool non_blocking=False,
//                    MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
// args: self, non_blocking, memory_format (None or Int), out, out(return).
// Converts self to out's dtype (any pair of supported dtypes; float → int
// truncates toward zero, → bool is `!= 0`) and out's dim order.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void to_copy_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  bool non_blocking = false;
  if (!bool_arg(ctx, args, 1, "non_blocking", &non_blocking)) return;
  EMBER_KERNEL_CHECK(ctx, args[2] != nullptr && (args[2]->is_none() || args[2]->is_int()),
                     "memory_format: expected None or an int, got %s",
                     args[2] ? tag_name(args[2]->tag) : "null");
  Tensor* out = tensor_arg(ctx, args, 3, "out");
  if (out == nullptr) return;
  if (!check_supported(ctx, *self, "self") || !check_supported(ctx, *out, "out")) return;
  if (!resize_out(ctx, *out, self->shape())) return;
  strided_copy(*self, self->strides, *out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_to_copy.out", to_copy_out, 5);

}  // namespace ember::kernels::portable
