// Copies of views along one dim that export leaves as *_copy ops.
//
// aten::narrow_copy.out(Tensor self, int dim, SymInt start, SymInt length, *,
//     Tensor(a!) out) -> Tensor(a!)
//   Keeps `length` elements of `dim` from `start` (negative start counts from
//   the end).
// aten::unfold_copy.out(Tensor self, int dimension, int size, int step, *,
//     Tensor(a!) out) -> Tensor(a!)
//   Every window of `size` elements of `dimension`, `step` apart: that dim
//   becomes the window count and a new last dim of `size` holds each window.
// aten::unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()
//   out[i] = self.select(dim, i).
// All dtypes; outs must have self's dtype.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_narrow_unfold_unbind_copy.h"

namespace ember::kernels::portable {

void narrow_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, int64_t start,
                     int64_t length, Tensor& out) {
  if (!check_view_copy_args(ctx, self, out)) return;
  EMBER_KERNEL_CHECK(ctx, self.dim > 0, "self: cannot narrow a 0-dim tensor");
  int32_t d = 0;
  if (!normalize_dim(ctx, dim, self.dim, "dim", &d)) return;
  const int64_t size = self.sizes[d];
  EMBER_KERNEL_CHECK(ctx, start >= -size && start <= size,
                     "start: %lld is out of range for dim %d of size %lld",
                     static_cast<long long>(start), d, static_cast<long long>(size));
  if (start < 0) start += size;
  EMBER_KERNEL_CHECK(ctx, length >= 0 && start + length <= size,
                     "length: start %lld + length %lld exceeds dim %d of size %lld",
                     static_cast<long long>(start), static_cast<long long>(length), d,
                     static_cast<long long>(size));
  TensorView v;
  for (int32_t i = 0; i < self.dim; ++i) {
    v.sizes[i] = i == d ? static_cast<int32_t>(length) : self.sizes[i];
    v.strides[i] = self.strides[i];
  }
  v.finish(self, self.dim, length == 0 ? 0 : start * self.strides[d]);
  if (!resize_out(ctx, out, v.t.shape())) return;
  if (out.numel > 0) strided_copy(v.t, v.strides, out);
}

void unfold_copy_out(KernelContext& ctx, const Tensor& self, int64_t dimension, int64_t size,
                     int64_t step, Tensor& out) {
  if (!check_view_copy_args(ctx, self, out)) return;
  EMBER_KERNEL_CHECK(ctx, self.dim < kTensorMaxDim,
                     "self: unfolding shape %s needs %d dims, more than the maximum of %d",
                     ShapeStr(self.shape()).c_str(), self.dim + 1, kTensorMaxDim);
  int32_t d = 0;
  // A 0-dim self unfolds as a 1-element dim (as eager): dimension 0 or -1.
  if (!normalize_dim(ctx, dimension, self.dim == 0 ? 1 : self.dim, "dimension", &d)) return;
  const int64_t extent = self.dim == 0 ? 1 : self.sizes[d];
  const int64_t stride = self.dim == 0 ? 1 : self.strides[d];
  EMBER_KERNEL_CHECK(ctx, size >= 0 && size <= extent,
                     "size: %lld must be in [0, %lld], the size of dimension %d",
                     static_cast<long long>(size), static_cast<long long>(extent), d);
  EMBER_KERNEL_CHECK(ctx, step > 0, "step: must be positive, got %lld",
                     static_cast<long long>(step));
  TensorView v;
  int32_t k = 0;
  for (int32_t i = 0; i < self.dim; ++i, ++k) {
    v.sizes[k] = self.sizes[i];
    v.strides[k] = self.strides[i];
  }
  if (self.dim > 0) {
    v.sizes[d] = static_cast<int32_t>((extent - size) / step + 1);
    v.strides[d] = step * stride;
  }
  v.sizes[k] = static_cast<int32_t>(size);
  v.strides[k] = stride;
  v.finish(self, k + 1, 0);
  if (!resize_out(ctx, out, v.t.shape())) return;
  if (out.numel > 0) strided_copy(v.t, v.strides, out);
}

void unbind_copy_int_out(KernelContext& ctx, const Tensor& self, int64_t dim, TensorList out) {
  if (!check_supported(ctx, self, "self")) return;
  EMBER_KERNEL_CHECK(ctx, self.dim > 0, "self: cannot unbind a 0-dim tensor");
  int32_t d = 0;
  if (!normalize_dim(ctx, dim, self.dim, "dim", &d)) return;
  EMBER_KERNEL_CHECK(ctx, out.size() == static_cast<size_t>(self.sizes[d]),
                     "out: has %zu tensors but self of shape %s has size %d at dim %d",
                     out.size(), ShapeStr(self.shape()).c_str(), self.sizes[d], d);
  for (size_t i = 0; i < out.size(); ++i) {
    Tensor& o = *out[i];
    if (!check_dtype(ctx, o, "out", self.dtype)) return;
    TensorView v;
    int32_t k = 0;
    for (int32_t j = 0; j < self.dim; ++j) {
      if (j == d) continue;
      v.sizes[k] = self.sizes[j];
      v.strides[k] = self.strides[j];
      ++k;
    }
    v.finish(self, k, static_cast<int64_t>(i) * self.strides[d]);
    if (!resize_out(ctx, o, v.t.shape())) return;
    if (o.numel > 0) strided_copy(v.t, v.strides, o);
  }
}

}  // namespace ember::kernels::portable
