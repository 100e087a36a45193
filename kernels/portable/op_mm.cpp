// aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// args: self [m, k], mat2 [k, n], out [m, n], out(return). All three share one
// dtype: float32/float64 (blocked GEMM), float16/bfloat16 (float accumulation)
// or an integral type (wrapping). Any dim orders.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/matmul.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void mm_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* mat2 = tensor_arg(ctx, args, 1, "mat2");
  if (mat2 == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  EMBER_KERNEL_CHECK(ctx, self->dim == 2, "self: expected a 2-D tensor, got shape %s",
                     ShapeStr(self->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, mat2->dim == 2, "mat2: expected a 2-D tensor, got shape %s",
                     ShapeStr(mat2->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, self->sizes[1] == mat2->sizes[0],
                     "self of shape %s and mat2 of shape %s cannot be multiplied",
                     ShapeStr(self->shape()).c_str(), ShapeStr(mat2->shape()).c_str());
  if (!check_dtype(ctx, *mat2, "mat2", self->dtype) || !check_dtype(ctx, *out, "out", self->dtype)) {
    return;
  }
  const int32_t shape[2] = {self->sizes[0], mat2->sizes[1]};
  if (!resize_out(ctx, *out, shape)) return;
  const bool ok = dispatch_dtype<kRealTypes>(self->dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    matmul_strided<S>(ctx, shape[0], shape[1], self->sizes[1],
                      MatView{self->data, 0, self->strides[0], self->strides[1]},
                      MatView{mat2->data, 0, mat2->strides[0], mat2->strides[1]},
                      MatView{out->data, 0, out->strides[0], out->strides[1]}, 1.0, 0.0);
  });
  if (!ok) fail_dtype(ctx, "self", self->dtype);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::mm.out", mm_out, 4);

}  // namespace ember::kernels::portable
