// aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1,
//                 Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
// args: self, mat1, mat2, beta, alpha, out, out(return).
// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to [m, n]; with
// beta == 0 self is ignored (NaN in self does not propagate), as in PyTorch.
// All tensors share one dtype (see aten::mm.out).
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/matmul.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

void addmm_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* mat1 = tensor_arg(ctx, args, 1, "mat1");
  if (mat1 == nullptr) return;
  Tensor* mat2 = tensor_arg(ctx, args, 2, "mat2");
  if (mat2 == nullptr) return;
  const EValue* beta = scalar_arg(ctx, args, 3, "beta");
  if (beta == nullptr) return;
  const EValue* alpha = scalar_arg(ctx, args, 4, "alpha");
  if (alpha == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 5, "out");
  if (out == nullptr) return;
  EMBER_KERNEL_CHECK(ctx, mat1->dim == 2, "mat1: expected a 2-D tensor, got shape %s",
                     ShapeStr(mat1->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, mat2->dim == 2, "mat2: expected a 2-D tensor, got shape %s",
                     ShapeStr(mat2->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, mat1->sizes[1] == mat2->sizes[0],
                     "mat1 of shape %s and mat2 of shape %s cannot be multiplied",
                     ShapeStr(mat1->shape()).c_str(), ShapeStr(mat2->shape()).c_str());
  if (!check_dtype(ctx, *mat1, "mat1", self->dtype) ||
      !check_dtype(ctx, *mat2, "mat2", self->dtype) ||
      !check_dtype(ctx, *out, "out", self->dtype)) {
    return;
  }
  const int32_t shape[2] = {mat1->sizes[0], mat2->sizes[1]};
  EMBER_KERNEL_CHECK(ctx, broadcastable_to(*self, shape),
                     "self of shape %s does not broadcast to the product's shape %s",
                     ShapeStr(self->shape()).c_str(), ShapeStr(shape).c_str());
  if (!resize_out(ctx, *out, shape)) return;
  const double b = beta->scalar_as_double();
  const bool ok = dispatch_dtype<kRealTypes>(self->dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (b != 0.0) {
      // out = self (broadcast), then the GEMM scales it by beta.
      apply_binary<S>(*self, *self, *out, [](auto x, auto) { return x; });
    }
    matmul_strided<S>(ctx, shape[0], shape[1], mat1->sizes[1],
                      MatView{mat1->data, 0, mat1->strides[0], mat1->strides[1]},
                      MatView{mat2->data, 0, mat2->strides[0], mat2->strides[1]},
                      MatView{out->data, 0, out->strides[0], out->strides[1]},
                      alpha->scalar_as_double(), b);
  });
  if (!ok) fail_dtype(ctx, "self", self->dtype);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::addmm.out", addmm_out, 7);

}  // namespace ember::kernels::portable
