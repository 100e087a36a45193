// aten::max_pool2d_with_indices_backward.grad_input(Tensor grad_output, Tensor self,
//     int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode,
//     Tensor indices, *, Tensor(a!) grad_input) -> Tensor(a!)
//
// grad_input (self's shape and dtype) is zero except where the forward pool's
// indices point: each output position adds its gradient at the flat position
// indices holds within its input plane (h·W + w), in row-major output order,
// as eager's loop does (overlapping windows accumulate). The geometry
// arguments only produced indices; they are not needed to route gradients.
// Floating dtypes; any dim order. An index outside the plane is an error.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_max_pool2d_backward.h"

namespace ember::kernels::portable {

void max_pool2d_with_indices_backward_grad_input(KernelContext& ctx, const Tensor& grad_output,
                                                 const Tensor& self, IntSpan kernel_size,
                                                 IntSpan stride, IntSpan padding,
                                                 IntSpan dilation, bool ceil_mode,
                                                 const Tensor& indices, Tensor& grad_input) {
  (void)kernel_size, (void)stride, (void)padding, (void)dilation, (void)ceil_mode;
  if (!is_floating_type(grad_output.dtype)) {
    fail_dtype(ctx, "grad_output", grad_output.dtype);
    return;
  }
  if (!check_dtype(ctx, self, "self", grad_output.dtype) ||
      !check_dtype(ctx, indices, "indices", ScalarType::Long) ||
      !check_dtype(ctx, grad_input, "grad_input", grad_output.dtype) ||
      !check_same_shape(ctx, indices, "indices", grad_output, "grad_output")) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, self.dim == 3 || self.dim == 4,
                     "self: expected 3 or 4 dims (C, H, W or N, C, H, W), got shape %s",
                     ShapeStr(self.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, grad_output.dim == self.dim,
                     "grad_output: shape %s does not match self's rank (shape %s)",
                     ShapeStr(grad_output.shape()).c_str(), ShapeStr(self.shape()).c_str());
  for (int32_t d = 0; d + 2 < self.dim; ++d) {
    EMBER_KERNEL_CHECK(ctx, grad_output.sizes[d] == self.sizes[d],
                       "grad_output: shape %s does not match self's leading dims (shape %s)",
                       ShapeStr(grad_output.shape()).c_str(), ShapeStr(self.shape()).c_str());
  }
  if (!resize_out(ctx, grad_input, self.shape())) return;
  const int32_t nd = self.dim;
  const int64_t in_h = self.sizes[nd - 2], in_w = self.sizes[nd - 1];
  const int64_t plane = in_h * in_w;
  (void)dispatch_dtype<kFloating>(grad_output.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    S* gi = grad_input.data_ptr<S>();
    for_each_index(grad_input.shape(), [&](const int32_t* idx) {
      gi[offset_of(idx, grad_input.strides, nd)] = convert<S>(CT(0));
      return true;
    });
    const S* go = grad_output.data_ptr<const S>();
    const int64_t* ix = indices.data_ptr<const int64_t>();
    for_each_index(grad_output.shape(), [&](const int32_t* idx) {
      const int64_t at = ix[offset_of(idx, indices.strides, nd)];
      if (at < 0 || at >= plane) {
        ctx.fail(Error::InvalidArgument, "indices: %lld is outside the input plane of %lld x %lld",
                 static_cast<long long>(at), static_cast<long long>(in_h),
                 static_cast<long long>(in_w));
        return false;
      }
      int64_t off = 0;
      for (int32_t d = 0; d + 2 < nd; ++d) off += idx[d] * grad_input.strides[d];
      off += (at / in_w) * grad_input.strides[nd - 2] + (at % in_w) * grad_input.strides[nd - 1];
      const CT g = convert<CT>(go[offset_of(idx, grad_output.strides, nd)]);
      gi[off] = convert<S>(static_cast<CT>(convert<CT>(gi[off]) + g));
      return true;
    });
  });
}

}  // namespace ember::kernels::portable
