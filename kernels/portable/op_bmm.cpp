// aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// args: self [b, m, k], mat2 [b, k, n], out [b, m, n], out(return). Dtypes as
// aten::mm.out; any dim orders.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/matmul.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void bmm_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* mat2 = tensor_arg(ctx, args, 1, "mat2");
  if (mat2 == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  EMBER_KERNEL_CHECK(ctx, self->dim == 3, "self: expected a 3-D tensor, got shape %s",
                     ShapeStr(self->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, mat2->dim == 3, "mat2: expected a 3-D tensor, got shape %s",
                     ShapeStr(mat2->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, self->sizes[0] == mat2->sizes[0] && self->sizes[2] == mat2->sizes[1],
                     "self of shape %s and mat2 of shape %s cannot be batch-multiplied",
                     ShapeStr(self->shape()).c_str(), ShapeStr(mat2->shape()).c_str());
  if (!check_dtype(ctx, *mat2, "mat2", self->dtype) || !check_dtype(ctx, *out, "out", self->dtype)) {
    return;
  }
  const int32_t shape[3] = {self->sizes[0], self->sizes[1], mat2->sizes[2]};
  if (!resize_out(ctx, *out, shape)) return;
  const bool ok = dispatch_dtype<kRealTypes>(self->dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto product = [&](KernelContext& c, int64_t i) {
      matmul_strided<S>(c, shape[1], shape[2], self->sizes[2],
                        MatView{self->data, i * self->strides[0], self->strides[1], self->strides[2]},
                        MatView{mat2->data, i * mat2->strides[0], mat2->strides[1], mat2->strides[2]},
                        MatView{out->data, i * out->strides[0], out->strides[1], out->strides[2]},
                        1.0, 0.0);
    };
    const int64_t macs = int64_t{shape[1]} * shape[2] * self->sizes[2];
    if (shape[0] > 1 && macs < kGemmParallelMinMacs && shape[0] * macs >= kGemmParallelMinMacs) {
      // Many small products (attention heads): one product per task, each
      // on its task's thread alone.
      ctx.parallel_for(static_cast<size_t>(shape[0]), [&](size_t i) {
        KernelContext single_thread(ctx.op_name());
        product(single_thread, static_cast<int64_t>(i));
      });
    } else {
      for (int64_t i = 0; i < shape[0]; ++i) product(ctx, i);
    }
  });
  if (!ok) fail_dtype(ctx, "self", self->dtype);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::bmm.out", bmm_out, 4);

}  // namespace ember::kernels::portable
