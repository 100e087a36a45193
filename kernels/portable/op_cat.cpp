// Concatenation and its inverse.
//
// aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
//   Inputs share every size but `dim`; 1-D empty tensors (shape [0]) are
//   skipped, as in PyTorch. The result dtype is the promotion of the inputs'
//   dtypes and must cast to out's.
// aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0,
//     *, Tensor(a!)[] out) -> ()
//   out[k] gets split_sizes[k] consecutive slices along dim; each out must
//   have self's dtype.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_cat.h"

namespace ember::kernels::portable {
namespace {

bool skipped_in_cat(const Tensor& t) { return t.dim == 1 && t.sizes[0] == 0; }

}  // namespace

void cat_out(KernelContext& ctx, TensorList tensors, int64_t dim, Tensor& out) {
  if (!check_supported(ctx, out, "out")) return;
  EMBER_KERNEL_CHECK(ctx, !tensors.empty(), "tensors: expected a non-empty list");
  const Tensor* ref = nullptr;
  ScalarType common = kUndefinedDtype;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = *tensors[k];
    if (!check_supported(ctx, t, "tensors")) return;
    common = common == kUndefinedDtype ? t.dtype : promote_types(common, t.dtype);
    if (ref == nullptr && !skipped_in_cat(t)) ref = &t;
  }
  if (!check_can_cast(ctx, common, out)) return;
  if (ref == nullptr) {  // Only skipped inputs: the result is empty [0].
    const int32_t zero[1] = {0};
    (void)resize_out(ctx, out, zero);
    return;
  }
  EMBER_KERNEL_CHECK(ctx, ref->dim > 0, "tensors: zero-dimensional tensor (entry 0) cannot be "
                     "concatenated");
  int32_t d = 0;
  if (!normalize_dim(ctx, dim, ref->dim, "dim", &d)) return;
  int32_t shape[kTensorMaxDim];
  for (int32_t i = 0; i < ref->dim; ++i) shape[i] = ref->sizes[i];
  int64_t total = 0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = *tensors[k];
    if (skipped_in_cat(t)) continue;
    bool match = t.dim == ref->dim;
    for (int32_t i = 0; match && i < t.dim; ++i) match = i == d || t.sizes[i] == ref->sizes[i];
    EMBER_KERNEL_CHECK(ctx, match,
                       "tensors: entry %zu has shape %s, which does not match %s except in "
                       "dim %d",
                       k, ShapeStr(t.shape()).c_str(), ShapeStr(ref->shape()).c_str(), d);
    total += t.sizes[d];
  }
  EMBER_KERNEL_CHECK(ctx, total <= INT32_MAX, "tensors: concatenated size %lld is too large",
                     static_cast<long long>(total));
  shape[d] = static_cast<int32_t>(total);
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(ref->dim)})) return;
  if (out.numel == 0) return;
  int64_t at = 0;
  for (Tensor* t : tensors) {
    if (skipped_in_cat(*t)) continue;
    if (t->numel > 0) {
      TensorView v;
      for (int32_t i = 0; i < out.dim; ++i) {
        v.sizes[i] = i == d ? t->sizes[d] : out.sizes[i];
        v.strides[i] = out.strides[i];
      }
      v.finish(out, out.dim, at * out.strides[d]);
      strided_copy(*t, t->strides, v.t);
    }
    at += t->sizes[d];
  }
}

void split_with_sizes_copy_out(KernelContext& ctx, const Tensor& self, IntSpan split_sizes,
                               int64_t dim, TensorList out) {
  const IntSpan sizes = split_sizes;
  if (!check_supported(ctx, self, "self")) return;
  EMBER_KERNEL_CHECK(ctx, self.dim > 0, "self: cannot split a 0-dim tensor");
  int32_t d = 0;
  if (!normalize_dim(ctx, dim, self.dim, "dim", &d)) return;
  EMBER_KERNEL_CHECK(ctx, out.size() == sizes.size(),
                     "out: has %zu tensors but split_sizes %s has %zu entries", out.size(),
                     ShapeStr(sizes).c_str(), sizes.size());
  int64_t sum = 0;
  for (int64_t s : sizes) {
    EMBER_KERNEL_CHECK(ctx, s >= 0, "split_sizes: %s has a negative size",
                       ShapeStr(sizes).c_str());
    sum += s;
  }
  EMBER_KERNEL_CHECK(ctx, sum == self.sizes[d],
                     "split_sizes: %s sums to %lld but self of shape %s has size %d at dim %d",
                     ShapeStr(sizes).c_str(), static_cast<long long>(sum),
                     ShapeStr(self.shape()).c_str(), self.sizes[d], d);
  int64_t at = 0;
  for (size_t k = 0; k < out.size(); ++k) {
    Tensor& o = *out[k];
    if (!check_dtype(ctx, o, "out", self.dtype)) return;
    TensorView v;
    for (int32_t i = 0; i < self.dim; ++i) {
      v.sizes[i] = i == d ? static_cast<int32_t>(sizes[k]) : self.sizes[i];
      v.strides[i] = self.strides[i];
    }
    v.finish(self, self.dim, sizes[k] == 0 ? 0 : at * self.strides[d]);
    if (!resize_out(ctx, o, v.t.shape())) return;
    if (o.numel > 0) strided_copy(v.t, v.strides, o);
    at += sizes[k];
  }
}

}  // namespace ember::kernels::portable
