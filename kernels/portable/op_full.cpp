// aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)
// Fills out (shape `size`, any dtype) with fill_value cast to out's dtype.
// aten::zeros.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_full.h"

namespace ember::kernels::portable {
namespace {

/// Checks `size` against out and fills out with `value`. Shared with zeros.
void fill_out(KernelContext& ctx, std::span<const int64_t> size, const EValue& value,
              Tensor& out) {
  if (!check_supported(ctx, out, "out")) return;
  int32_t shape[kTensorMaxDim];
  if (!size_to_shape(ctx, size, shape)) return;
  if (!resize_out(ctx, out, {shape, size.size()})) return;
  (void)dispatch_dtype<kAllTypes>(out.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    // Integers take an Int scalar exactly (no trip through double).
    const S v = (std::is_integral_v<S> && !value.is_double())
                    ? static_cast<S>(value.scalar_as_int())
                    : convert<S>(scalar_as<compute_t<S>>(value));
    S* d = out.data_ptr<S>();
    // Every dim order covers the same numel contiguous elements.
    for (int64_t i = 0; i < out.numel; ++i) d[i] = v;
  });
}

}  // namespace

void full_out(KernelContext& ctx, IntSpan size, const EValue& fill_value, Tensor& out) {
  fill_out(ctx, size, fill_value, out);
}

void zeros_out(KernelContext& ctx, IntSpan size, Tensor& out) {
  EValue zero;
  zero.tag = Tag::Int;
  zero.as_int = 0;
  fill_out(ctx, size, zero, out);
}

}  // namespace ember::kernels::portable
