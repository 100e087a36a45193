// aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)
// out[i_0..] = self permuted: out dim d is self dim dims[d] (negative dims
// wrap). Any dtype; out's dtype must match.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/generated/functions/portable/op_permute_copy.h"

namespace ember::kernels::portable {

void permute_copy_out(KernelContext& ctx, const Tensor& self, IntSpan dims, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype)) return;
  EMBER_KERNEL_CHECK(ctx, static_cast<int32_t>(dims.size()) == self.dim,
                     "dims: %s has %zu entries but self has shape %s", ShapeStr(dims).c_str(),
                     dims.size(), ShapeStr(self.shape()).c_str());
  int32_t shape[kTensorMaxDim];
  int64_t src_strides[kTensorMaxDim];
  bool seen[kTensorMaxDim] = {};
  for (int32_t d = 0; d < self.dim; ++d) {
    int32_t s = 0;
    if (!normalize_dim(ctx, dims[d], self.dim, "dims", &s)) return;
    EMBER_KERNEL_CHECK(ctx, !seen[s], "dims: %s repeats dim %d", ShapeStr(dims).c_str(), s);
    seen[s] = true;
    shape[d] = self.sizes[s];
    src_strides[d] = self.strides[s];
  }
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(self.dim)})) return;
  strided_copy(self, src_strides, out);
}

}  // namespace ember::kernels::portable
