// Copies that only change the shape, not the row-major order of elements.
//
// aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)
//   Drops `dim` when its size is 1.
// aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out) -> Tensor(a!)
//   Drops each listed dim of size 1.
// aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)
//   Inserts a size-1 dim at `dim` (in [-rank-1, rank]).
// aten::alias_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//   out = self.
// All dtypes; out's dtype must match self's. out may have any dim order.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/generated/functions/portable/op_squeeze_copy.h"

namespace ember::kernels::portable {
namespace {

/// Resizes out to `shape` and copies self in row-major order.
void finish_reshape(KernelContext& ctx, const Tensor& self, std::span<const int32_t> shape,
                    Tensor& out) {
  if (!resize_out(ctx, out, shape)) return;
  reshape_copy(self, out);
}

/// self of a dtype the kernels know, out of self's dtype.
bool check_operands(KernelContext& ctx, const Tensor& self, const Tensor& out) {
  return check_supported(ctx, self, "self") && check_dtype(ctx, out, "out", self.dtype);
}

/// Squeezes the dims flagged in `drop` (only those of size 1).
void squeeze_flagged(KernelContext& ctx, const Tensor& self, const bool* drop, Tensor& out) {
  int32_t shape[kTensorMaxDim];
  int32_t n = 0;
  for (int32_t d = 0; d < self.dim; ++d) {
    if (!(drop[d] && self.sizes[d] == 1)) shape[n++] = self.sizes[d];
  }
  finish_reshape(ctx, self, {shape, static_cast<size_t>(n)}, out);
}

}  // namespace

void squeeze_copy_dim_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out) {
  if (!check_operands(ctx, self, out)) return;
  int32_t d = 0;
  if (!normalize_dim(ctx, dim, self.dim, "dim", &d)) return;
  bool drop[kTensorMaxDim] = {};
  if (self.dim > 0) drop[d] = true;
  squeeze_flagged(ctx, self, drop, out);
}

void squeeze_copy_dims_out(KernelContext& ctx, const Tensor& self, IntSpan dim, Tensor& out) {
  if (!check_operands(ctx, self, out)) return;
  bool drop[kTensorMaxDim] = {};
  for (int64_t v : dim) {
    int32_t d = 0;
    if (!normalize_dim(ctx, v, self.dim, "dim", &d)) return;
    EMBER_KERNEL_CHECK(ctx, self.dim == 0 || !drop[d], "dim: %s repeats dim %d",
                       ShapeStr(dim).c_str(), d);
    if (self.dim > 0) drop[d] = true;
  }
  squeeze_flagged(ctx, self, drop, out);
}

void unsqueeze_copy_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& out) {
  if (!check_operands(ctx, self, out)) return;
  EMBER_KERNEL_CHECK(ctx, self.dim < kTensorMaxDim, "self: rank %d is already the maximum",
                     self.dim);
  int32_t d = 0;
  if (!normalize_dim(ctx, dim, self.dim + 1, "dim", &d)) return;
  int32_t shape[kTensorMaxDim];
  for (int32_t i = 0, k = 0; i <= self.dim; ++i) shape[i] = i == d ? 1 : self.sizes[k++];
  finish_reshape(ctx, self, {shape, static_cast<size_t>(self.dim + 1)}, out);
}

void alias_copy_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!check_operands(ctx, self, out)) return;
  if (!resize_out(ctx, out, self.shape())) return;
  if (out.numel > 0 && out.data != self.data) strided_copy(self, self.strides, out);
}

}  // namespace ember::kernels::portable
