// Copies of strided views of self: each op builds (sizes, strides, offset)
// over self's memory and hands them to `strided_copy`.
//
// aten::as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride,
//     SymInt? storage_offset=None, *, Tensor(a!) out) -> Tensor(a!)
//   Reads self's memory as its storage (dense tensors start at storage offset
//   0); every element read must lie inside self's numel.
// aten::diagonal_copy.out(Tensor self, int offset=0, int dim1=0, int dim2=1, *,
//     Tensor(a!) out) -> Tensor(a!)
//   The diagonal becomes the last dim of out.
// aten::flip.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)
//   Negative strides over self.
// aten::repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out) -> Tensor(a!)
//   Each out dim d of size r*s is seen as (r, s) with source strides
//   (0, self stride).
// aten::copy.out(Tensor self, Tensor src, bool non_blocking=False, *,
//     Tensor(a!) out) -> Tensor(a!)
//   out (self's shape and dtype) = src broadcast to self's shape, converted to
//   self's dtype.
// All dtypes; out's dtype must be self's.
#include <algorithm>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_strided_view_copy.h"

namespace ember::kernels::portable {

void as_strided_copy_out(KernelContext& ctx, const Tensor& self, IntSpan size, IntSpan stride,
                         std::optional<int64_t> storage_offset, Tensor& out) {
  const int64_t offset = storage_offset.value_or(0);
  if (!check_view_copy_args(ctx, self, out)) return;
  EMBER_KERNEL_CHECK(ctx, size.size() == stride.size(),
                     "stride: %s has %zu entries but size %s has %zu",
                     ShapeStr(stride).c_str(), stride.size(), ShapeStr(size).c_str(),
                     size.size());
  EMBER_KERNEL_CHECK(ctx, size.size() <= static_cast<size_t>(kTensorMaxDim),
                     "size: %zu dims exceed the maximum of %d", size.size(), kTensorMaxDim);
  EMBER_KERNEL_CHECK(ctx, offset >= 0, "storage_offset: must be >= 0, got %lld",
                     static_cast<long long>(offset));
  TensorView v;
  int64_t last = offset;
  bool empty = false;
  for (size_t d = 0; d < size.size(); ++d) {
    EMBER_KERNEL_CHECK(ctx, size[d] >= 0 && size[d] <= INT32_MAX, "size: invalid size %s",
                       ShapeStr(size).c_str());
    EMBER_KERNEL_CHECK(ctx, stride[d] >= 0 && stride[d] <= (int64_t{1} << 40),
                       "stride: invalid stride %s (must be >= 0)", ShapeStr(stride).c_str());
    v.sizes[d] = static_cast<int32_t>(size[d]);
    v.strides[d] = stride[d];
    if (size[d] == 0) empty = true;
    else last += (size[d] - 1) * stride[d];
  }
  EMBER_KERNEL_CHECK(ctx, empty || last < self.numel,
                     "size %s, stride %s and storage_offset %lld reach element %lld, outside "
                     "self's %lld elements",
                     ShapeStr(size).c_str(), ShapeStr(stride).c_str(),
                     static_cast<long long>(offset), static_cast<long long>(last),
                     static_cast<long long>(self.numel));
  v.finish(self, static_cast<int32_t>(size.size()), empty ? 0 : offset);
  if (!resize_out(ctx, out, v.t.shape())) return;
  if (out.numel > 0) strided_copy(v.t, v.strides, out);
}

void diagonal_copy_out(KernelContext& ctx, const Tensor& self, int64_t offset, int64_t dim1,
                       int64_t dim2, Tensor& out) {
  if (!check_view_copy_args(ctx, self, out)) return;
  EMBER_KERNEL_CHECK(ctx, self.dim >= 2, "self: needs at least 2 dims, got shape %s",
                     ShapeStr(self.shape()).c_str());
  int32_t d1 = 0, d2 = 0;
  if (!normalize_dim(ctx, dim1, self.dim, "dim1", &d1) ||
      !normalize_dim(ctx, dim2, self.dim, "dim2", &d2)) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, d1 != d2, "dim1 and dim2 are both dim %d", d1);
  const int64_t s1 = self.sizes[d1], s2 = self.sizes[d2];
  int64_t len = offset >= 0 ? std::min(s1, s2 - offset) : std::min(s1 + offset, s2);
  if (len < 0) len = 0;
  int64_t base = 0;
  if (len > 0) base = offset >= 0 ? offset * self.strides[d2] : -offset * self.strides[d1];
  TensorView v;
  int32_t k = 0;
  for (int32_t d = 0; d < self.dim; ++d) {
    if (d == d1 || d == d2) continue;
    v.sizes[k] = self.sizes[d];
    v.strides[k] = self.strides[d];
    ++k;
  }
  v.sizes[k] = static_cast<int32_t>(len);
  v.strides[k] = self.strides[d1] + self.strides[d2];
  v.finish(self, k + 1, base);
  if (!resize_out(ctx, out, v.t.shape())) return;
  if (out.numel > 0) strided_copy(v.t, v.strides, out);
}

void flip_out(KernelContext& ctx, const Tensor& self, IntSpan dims, Tensor& out) {
  if (!check_view_copy_args(ctx, self, out)) return;
  bool flip[kTensorMaxDim] = {};
  for (int64_t dim : dims) {
    int32_t d = 0;
    if (!normalize_dim(ctx, dim, self.dim, "dims", &d)) return;
    EMBER_KERNEL_CHECK(ctx, self.dim == 0 || !flip[d], "dims: %s repeats dim %d",
                       ShapeStr(dims).c_str(), d);
    if (self.dim > 0) flip[d] = true;
  }
  if (!resize_out(ctx, out, self.shape())) return;
  if (out.numel == 0) return;
  TensorView v;
  int64_t base = 0;
  for (int32_t d = 0; d < self.dim; ++d) {
    v.sizes[d] = self.sizes[d];
    v.strides[d] = flip[d] ? -self.strides[d] : self.strides[d];
    if (flip[d]) base += (self.sizes[d] - 1) * self.strides[d];
  }
  v.finish(self, self.dim, base);
  strided_copy(v.t, v.strides, out);
}

void repeat_out(KernelContext& ctx, const Tensor& self, IntSpan repeats, Tensor& out) {
  if (!check_view_copy_args(ctx, self, out)) return;
  const int32_t n = static_cast<int32_t>(repeats.size());
  EMBER_KERNEL_CHECK(ctx, n >= self.dim && n <= kTensorMaxDim,
                     "repeats: %s has fewer entries than self has dims (shape %s) or more than %d",
                     ShapeStr(repeats).c_str(), ShapeStr(self.shape()).c_str(), kTensorMaxDim);
  const int32_t lead = n - self.dim;
  int32_t shape[kTensorMaxDim];
  for (int32_t d = 0; d < n; ++d) {
    const int64_t s = d >= lead ? self.sizes[d - lead] : 1;
    EMBER_KERNEL_CHECK(ctx, repeats[d] >= 0 && repeats[d] * s <= INT32_MAX,
                       "repeats: invalid repeats %s for self of shape %s",
                       ShapeStr(repeats).c_str(), ShapeStr(self.shape()).c_str());
    shape[d] = static_cast<int32_t>(repeats[d] * s);
  }
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(n)})) return;
  if (out.numel == 0) return;
  // out dim d (size r*s) as (r, s): out strides (s*os, os), source (0, ss).
  // Dims with r == 1 (or s == 1) need no split.
  TensorView ov, sv;
  int32_t k = 0;
  for (int32_t d = 0; d < n; ++d) {
    const int32_t s = d >= lead ? self.sizes[d - lead] : 1;
    const int64_t ss = d >= lead ? self.strides[d - lead] : 0;
    const int32_t r = static_cast<int32_t>(repeats[d]);
    if (r > 1 && s > 1) {
      EMBER_KERNEL_CHECK(ctx, k + 2 <= kTensorMaxDim,
                         "repeats: %s over self of shape %s needs more than %d loop dims",
                         ShapeStr(repeats).c_str(), ShapeStr(self.shape()).c_str(),
                         kTensorMaxDim);
      ov.sizes[k] = r;
      ov.strides[k] = static_cast<int64_t>(s) * out.strides[d];
      sv.strides[k] = 0;
      ++k;
    }
    ov.sizes[k] = r > 1 && s > 1 ? s : shape[d];
    ov.strides[k] = out.strides[d];
    sv.strides[k] = s > 1 ? ss : 0;
    ++k;
  }
  ov.finish(out, k, 0);
  strided_copy(self, sv.strides, ov.t);
}

void copy_out(KernelContext& ctx, const Tensor& self, const Tensor& src, bool non_blocking,
              Tensor& out) {
  (void)non_blocking;
  if (!check_view_copy_args(ctx, self, out) || !check_supported(ctx, src, "src")) return;
  EMBER_KERNEL_CHECK(ctx, broadcastable_to(src, self.shape()),
                     "src of shape %s does not broadcast to self of shape %s",
                     ShapeStr(src.shape()).c_str(), ShapeStr(self.shape()).c_str());
  if (!resize_out(ctx, out, self.shape())) return;
  if (out.numel == 0) return;
  int64_t strides[kTensorMaxDim];
  broadcast_strides(src, out.shape(), strides);
  strided_copy(src, strides, out);
}

}  // namespace ember::kernels::portable
