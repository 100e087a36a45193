// aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None,
//                 Tensor(a!) out) -> Tensor(a!)
// args: self, memory_format (None or Int), out, out(return). Copies self
// into out, whose dim order (fixed ahead of time) is the memory format the
// program asked for; any dtype, out's dtype must match.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void clone_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  EMBER_KERNEL_CHECK(ctx, args[1] != nullptr && (args[1]->is_none() || args[1]->is_int()),
                     "memory_format: expected None or an int, got %s",
                     args[1] ? tag_name(args[1]->tag) : "null");
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  if (!check_supported(ctx, *self, "self") || !check_dtype(ctx, *out, "out", self->dtype)) return;
  if (!resize_out(ctx, *out, self->shape())) return;
  strided_copy(*self, self->strides, *out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::clone.out", clone_out, 4);

}  // namespace ember::kernels::portable
