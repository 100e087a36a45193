// Selecting whole slices by a list of indices.
//
// aten::index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)
//   index is 0-D or 1-D int64/int32; out dim `dim` has index.numel entries:
//   out[.., j, ..] = self[.., index[j], ..].
// aten::embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1,
//     bool scale_grad_by_freq=False, bool sparse=False, *, Tensor(a!) out) -> Tensor(a!)
//   weight is 2-D; out has shape indices.shape + [weight.size(1)] and row
//   p = weight[indices[p]]. The other arguments only affect gradients.
// Index values must lie in [0, size) (negative values fail, as in PyTorch).
// All dtypes; out must have self's (weight's) dtype.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_index_select.h"

namespace ember::kernels::portable {

void index_select_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                      Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype) ||
      !check_index_dtype(ctx, index, "index")) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, index.dim <= 1, "index: expected 0-D or 1-D, got shape %s",
                     ShapeStr(index.shape()).c_str());
  int32_t d = 0;
  if (!normalize_dim(ctx, dim, self.dim, "dim", &d)) return;
  if (self.dim == 0) {
    EMBER_KERNEL_CHECK(ctx, index.numel == 1, "index: a 0-dim self takes one index, got %lld",
                       static_cast<long long>(index.numel));
    int64_t v = 0;
    if (!checked_index(ctx, load_index(index, 0), 1, 0, false, "index", &v)) return;
    if (!resize_out(ctx, out, self.shape())) return;
    strided_copy(self, self.strides, out);
    return;
  }
  int32_t shape[kTensorMaxDim];
  for (int32_t i = 0; i < self.dim; ++i) shape[i] = self.sizes[i];
  shape[d] = static_cast<int32_t>(index.numel);
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(self.dim)})) return;
  const int64_t istride = index.dim == 0 ? 0 : index.strides[0];
  // Check every index first: a failed kernel then writes nothing.
  for (int64_t j = 0; j < index.numel; ++j) {
    int64_t v = 0;
    if (!checked_index(ctx, load_index(index, j * istride), self.sizes[d], d, false, "index",
                       &v)) {
      return;
    }
  }
  if (out.numel == 0) return;
  for (int64_t j = 0; j < index.numel; ++j) {
    const int64_t v = load_index(index, j * istride);
    TensorView src, dst;
    int32_t k = 0;
    for (int32_t i = 0; i < self.dim; ++i) {
      if (i == d) continue;
      src.sizes[k] = dst.sizes[k] = self.sizes[i];
      src.strides[k] = self.strides[i];
      dst.strides[k] = out.strides[i];
      ++k;
    }
    src.finish(self, k, v * self.strides[d]);
    dst.finish(out, k, j * out.strides[d]);
    strided_copy(src.t, src.strides, dst.t);
  }
}

void embedding_out(KernelContext& ctx, const Tensor& weight, const Tensor& indices,
                   int64_t padding_idx, bool scale_grad_by_freq, bool sparse, Tensor& out) {
  (void)padding_idx;  // Gradient-only arguments.
  (void)scale_grad_by_freq;
  (void)sparse;
  if (!check_supported(ctx, weight, "weight") || !check_dtype(ctx, out, "out", weight.dtype) ||
      !check_index_dtype(ctx, indices, "indices")) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, weight.dim == 2, "weight: expected 2-D, got shape %s",
                     ShapeStr(weight.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, indices.dim < kTensorMaxDim, "indices: rank %d is too large",
                     indices.dim);
  int32_t shape[kTensorMaxDim];
  for (int32_t i = 0; i < indices.dim; ++i) shape[i] = indices.sizes[i];
  shape[indices.dim] = weight.sizes[1];
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(indices.dim + 1)})) return;
  const int32_t rows = weight.sizes[0];
  const int32_t cols = weight.sizes[1];
  bool ok = true;
  // Validate first so a failure leaves out untouched.
  for_each_index(indices.shape(), [&](const int32_t* idx) {
    int64_t v = 0;
    ok = checked_index(ctx, load_index(indices, offset_of(idx, indices.strides, indices.dim)),
                       rows, 0, false, "indices", &v);
    return ok;
  });
  if (!ok || out.numel == 0) return;
  const int64_t wc = weight.strides[1], oc = out.strides[indices.dim];
  dispatch_element_size(weight.dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* w = weight.data_ptr<U>();
    U* o = out.data_ptr<U>();
    for_each_index(indices.shape(), [&](const int32_t* idx) {
      const int64_t v = load_index(indices, offset_of(idx, indices.strides, indices.dim));
      const U* src = w + v * weight.strides[0];
      U* dst = o + offset_of(idx, out.strides, indices.dim);
      for (int32_t c = 0; c < cols; ++c) dst[c * oc] = src[c * wc];
      return true;
    });
  });
}

}  // namespace ember::kernels::portable
