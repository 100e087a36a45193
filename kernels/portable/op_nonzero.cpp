// Ops driven by which elements are nonzero / true.
//
// aten::nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//   out (int64) gets shape [n, self.dim]: the
//   coordinates of the n nonzero elements in row-major order. n depends on
//   the data: out must be dynamically bounded with room for it, or fails
//   naming both shapes.
// aten::masked_scatter.out(Tensor self, Tensor mask, Tensor source, *,
//     Tensor(a!) out) -> Tensor(a!)
//   out has the broadcast shape of
//   self and mask (bool); walking out in row-major order, each position where
//   mask is true takes the next element of source (read in row-major order),
//   others keep self. source needs at least as many elements as mask has true
//   positions. self, source and out share a dtype (any).
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_nonzero.h"

namespace ember::kernels::portable {
namespace {

/// Storage offset of logical (row-major) element `i` of `t`.
int64_t logical_offset(const Tensor& t, int64_t i) {
  int64_t off = 0;
  for (int32_t d = t.dim - 1; d >= 0; --d) {
    off += (i % t.sizes[d]) * t.strides[d];
    i /= t.sizes[d];
  }
  return off;
}

}  // namespace

void nonzero_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", ScalarType::Long)) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, out.dim == 2, "out: expected 2 dims, got shape %s",
                     ShapeStr(out.shape()).c_str());
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* s = self.data_ptr<S>();
    int64_t n = 0;
    for_each_index(self.shape(), [&](const int32_t* idx) {
      n += convert<bool>(s[offset_of(idx, self.strides, self.dim)]) ? 1 : 0;
      return true;
    });
    EMBER_KERNEL_CHECK(ctx, n <= INT32_MAX, "self: %lld nonzero elements are too many",
                       static_cast<long long>(n));
    const int32_t shape[2] = {static_cast<int32_t>(n), self.dim};
    if (!resize_out(ctx, out, shape)) return;
    if (out.numel == 0) return;
    int64_t* o = out.data_ptr<int64_t>();
    int64_t row = 0;
    for_each_index(self.shape(), [&](const int32_t* idx) {
      if (convert<bool>(s[offset_of(idx, self.strides, self.dim)])) {
        for (int32_t d = 0; d < self.dim; ++d) {
          o[row * out.strides[0] + d * out.strides[1]] = idx[d];
        }
        ++row;
      }
      return true;
    });
  });
}

void masked_scatter_out(KernelContext& ctx, const Tensor& self, const Tensor& mask,
                        const Tensor& source, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, mask, "mask", ScalarType::Bool) ||
      !check_dtype(ctx, source, "source", self.dtype) ||
      !check_dtype(ctx, out, "out", self.dtype)) {
    return;
  }
  int32_t shape[kTensorMaxDim];
  int32_t dim = 0;
  EMBER_KERNEL_CHECK(ctx, broadcast_shapes(self.shape(), mask.shape(), shape, &dim),
                     "mask: shape %s does not broadcast with self of shape %s",
                     ShapeStr(mask.shape()).c_str(), ShapeStr(self.shape()).c_str());
  const std::span<const int32_t> bshape{shape, static_cast<size_t>(dim)};
  int64_t mstrides[kTensorMaxDim], sstrides[kTensorMaxDim];
  broadcast_strides(mask, bshape, mstrides);
  broadcast_strides(self, bshape, sstrides);
  const BoolByte* m = mask.data_ptr<const BoolByte>();
  int64_t count = 0;
  for_each_index(bshape, [&](const int32_t* idx) {
    count += m[offset_of(idx, mstrides, dim)] ? 1 : 0;
    return true;
  });
  EMBER_KERNEL_CHECK(ctx, count <= source.numel,
                     "source: has %lld elements but mask selects %lld",
                     static_cast<long long>(source.numel), static_cast<long long>(count));
  if (!resize_out(ctx, out, bshape)) return;
  if (out.numel == 0) return;
  strided_copy(self, sstrides, out);
  dispatch_element_size(self.dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = source.data_ptr<U>();
    U* o = out.data_ptr<U>();
    int64_t k = 0;
    for_each_index(bshape, [&](const int32_t* idx) {
      if (m[offset_of(idx, mstrides, dim)]) {
        o[offset_of(idx, out.strides, dim)] = src[logical_offset(source, k++)];
      }
      return true;
    });
  });
}

}  // namespace ember::kernels::portable
