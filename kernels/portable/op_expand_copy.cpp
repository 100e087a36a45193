// aten::expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False,
//                       Tensor(a!) out) -> Tensor(a!)
// Broadcasts self to `size` (new leading dims allowed; -1 keeps self's size).
// Any dtype; out's dtype must match. `implicit` does not change the result.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/generated/functions/portable/op_expand_copy.h"

namespace ember::kernels::portable {

void expand_copy_out(KernelContext& ctx, const Tensor& self, IntSpan size, bool implicit,
                     Tensor& out) {
  (void)implicit;
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype)) return;
  const int32_t n = static_cast<int32_t>(size.size());
  EMBER_KERNEL_CHECK(ctx, n >= self.dim && n <= kTensorMaxDim,
                     "size: %s has fewer dims than self of shape %s (or more than %d)",
                     ShapeStr(size).c_str(), ShapeStr(self.shape()).c_str(), kTensorMaxDim);
  int32_t shape[kTensorMaxDim];
  const int32_t lead = n - self.dim;
  for (int32_t d = 0; d < n; ++d) {
    const int64_t want = size[d];
    const int32_t have = d >= lead ? self.sizes[d - lead] : 1;
    if (want == -1) {
      EMBER_KERNEL_CHECK(ctx, d >= lead, "size: -1 at new leading dim %d of %s", d,
                         ShapeStr(size).c_str());
      shape[d] = have;
      continue;
    }
    EMBER_KERNEL_CHECK(ctx, want >= 0 && want <= INT32_MAX && (have == 1 || have == want),
                       "size: self of shape %s cannot expand to %s",
                       ShapeStr(self.shape()).c_str(), ShapeStr(size).c_str());
    shape[d] = static_cast<int32_t>(want);
  }
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(n)})) return;
  int64_t src_strides[kTensorMaxDim];
  broadcast_strides(self, out.shape(), src_strides);
  strided_copy(self, src_strides, out);
}

}  // namespace ember::kernels::portable
