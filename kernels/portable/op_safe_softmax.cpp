// ember_fused::safe_softmax.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)
//
// aten::_safe_softmax: softmax over `dim`, except that a slice whose values
// are all -inf gives zeros (not NaN). What SDPA's math form computes for a
// query row that may attend to nothing, and what passes/fuse_safe_softmax.py
// makes of the six ops that form decomposes it into (softmax, then eq, not,
// any, not, full_like and where to zero those rows). float32; self and out
// in the same dim order (any one).
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/softmax_f32.h"
#include "kernels/portable/util/unary.h"  // unary_detail::same_layout
#include "kernels/generated/functions/portable/op_safe_softmax.h"

namespace ember::kernels::portable {

Error safe_softmax_out_prepare(KernelPrepareContext& ctx, const Tensor& self, int64_t dim,
                               Tensor& out) {
  EMBER_PREPARE_CHECK(ctx, self.dtype == ScalarType::Float,
                      "self: dtype %s is not supported (float32 only)",
                      scalar_type_name(self.dtype));
  EMBER_PREPARE_CHECK(ctx, out.dtype == ScalarType::Float,
                      "out: dtype %s, must be self's float32", scalar_type_name(out.dtype));
  const int64_t rank = self.dim > 0 ? self.dim : 1;
  EMBER_PREPARE_CHECK(ctx, dim >= -rank && dim < rank, "dim %lld is out of range for %d dims",
                      static_cast<long long>(dim), static_cast<int>(self.dim));
  return Error::Ok;
}

void safe_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim_arg, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, self.dtype == ScalarType::Float && out.dtype == ScalarType::Float,
                     "self and out must be float32, got %s and %s",
                     scalar_type_name(self.dtype), scalar_type_name(out.dtype));
  int32_t dim = 0;
  if (self.dim > 0 && !normalize_dim(ctx, dim_arg, self.dim, "dim", &dim)) return;
  if (!resize_out(ctx, out, self.shape())) return;
  if (out.numel == 0) return;
  EMBER_KERNEL_CHECK(ctx, unary_detail::same_layout(self, out),
                     "self and out must have the same dim order");
  // The dims after `dim` in the dim order span strides[dim] elements: the
  // data is [outer, n, inner] blocks.
  const int64_t n = self.dim > 0 ? self.sizes[dim] : 1;
  const int64_t inner = self.dim > 0 ? self.strides[dim] : 1;
  const float* x = self.data_ptr<const float>();
  float* y = out.data_ptr<float>();
  parallel_range(ctx, self.numel / (n * inner), kParallelMinElements / (n * inner) + 1, 1,
                 [&](int64_t begin, int64_t end) {
                   safe_softmax_f32(x + begin * n * inner, y + begin * n * inner, end - begin, n,
                                    inner);
                 });
}

}  // namespace ember::kernels::portable
