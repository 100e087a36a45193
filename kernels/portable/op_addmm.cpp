// aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1,
//                 Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to [m, n]; with
// beta == 0 self is ignored (NaN in self does not propagate), as in PyTorch.
// All tensors share one dtype (see aten::mm.out). A constant float32 mat2 (a
// linear layer's weight) is packed once, at prepare, into the GEMM's B panels.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/matmul.h"
#include "kernels/portable/util/matmul_out.h"
#include "kernels/generated/functions/portable/op_addmm.h"

namespace ember::kernels::portable {

Error addmm_out_prepare(KernelPrepareContext& ctx, const Tensor& self, const Tensor& mat1,
                        const Tensor& mat2, const EValue& beta, const EValue& alpha,
                        Tensor& out) {
  (void)self;
  (void)beta;
  (void)alpha;
  (void)out;
  return prepare_constant_mat2(ctx, mat1, mat2);
}

void addmm_out(KernelContext& ctx, const Tensor& self_arg, const Tensor& mat1_arg,
               const Tensor& mat2_arg, const EValue& beta_arg, const EValue& alpha_arg,
               Tensor& out_arg) {
  const Tensor* self = &self_arg;
  const Tensor* mat1 = &mat1_arg;
  const Tensor* mat2 = &mat2_arg;
  const EValue* beta = &beta_arg;
  const EValue* alpha = &alpha_arg;
  Tensor* out = &out_arg;
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
  const MatmulPrepared* prepared = prepared_mat2(ctx, *mat2);
  // A linear layer's bias (float32 [n] or [1, n], beta = alpha = 1) is added
  // to each C tile after its last k-block instead of being copied into out first.
  const double a = alpha->scalar_as_double();
  if (self->dtype == ScalarType::Float && b == 1.0 && a == 1.0 && self->numel == shape[1] &&
      (self->dim == 1 || (self->dim == 2 && self->sizes[0] == 1))) {
    GemmEpilogue<float> ep{};
    ep.col_bias = self->data_ptr<const float>();
    ep.col_bias_stride = self->strides[self->dim - 1];
    matmul_strided<float>(ctx, shape[0], shape[1], mat1->sizes[1],
                          MatView{mat1->data, 0, mat1->strides[0], mat1->strides[1]},
                          MatView{mat2->data, 0, mat2->strides[0], mat2->strides[1]},
                          MatView{out->data, 0, out->strides[0], out->strides[1]}, 1.0, 0.0,
                          prepared != nullptr ? &prepared->panels : nullptr, &ep);
    return;
  }
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
                      a, b,
                      prepared != nullptr ? &prepared->panels : nullptr);
  });
  if (!ok) fail_dtype(ctx, "self", self->dtype);
}

}  // namespace ember::kernels::portable
