// aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
// args: self, size, out, out(return). Copies self into out in row-major
// logical order; one size may be -1. Any dtype; out's dtype must match.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void view_copy_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  std::span<const int64_t> size;
  if (!int_list_arg(ctx, args, 1, "size", &size)) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  if (!check_supported(ctx, *self, "self") || !check_dtype(ctx, *out, "out", self->dtype)) return;
  int32_t shape[kTensorMaxDim];
  if (!infer_view_sizes(ctx, size, self->numel, "size", shape)) return;
  if (!resize_out(ctx, *out, {shape, size.size()})) return;
  reshape_copy(*self, *out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::view_copy.out", view_copy_out, 4);

}  // namespace ember::kernels::portable
