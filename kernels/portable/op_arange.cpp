// Ops that only size (and maybe fill) out.
//
// aten::arange.start_out(Scalar start, Scalar end, Scalar step=1, *,
//     Tensor(a!) out) -> Tensor(a!)
//   out (1-D, any dtype but bool)
//   gets ceil((end - start) / step) values start + i * step, computed in
//   double for floating out; for integral out, start and step are first
//   truncated to integers (as PyTorch does for fractional arguments).
// aten::empty.out(SymInt[] size, *, MemoryFormat? memory_format=None,
//     Tensor(a!) out) -> Tensor(a!)
// aten::empty_strided.out(SymInt[] size, SymInt[] stride, *, Tensor(a!) out) -> Tensor(a!)
//   Both resize out to `size` and leave its contents as they are; out's dim
//   order (fixed ahead of time) stands for the memory format / strides.
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_arange.h"

namespace ember::kernels::portable {

void arange_start_out(KernelContext& ctx, const EValue& start, const EValue& end,
                      const EValue& step, Tensor& out) {
  if (!check_supported(ctx, out, "out")) return;
  EMBER_KERNEL_CHECK(ctx, out.dtype != ScalarType::Bool, "out: unsupported dtype bool");
  EMBER_KERNEL_CHECK(ctx, out.dim == 1, "out: expected 1 dim, got shape %s",
                     ShapeStr(out.shape()).c_str());
  const double s = start.scalar_as_double(), e = end.scalar_as_double(),
               st = step.scalar_as_double();
  EMBER_KERNEL_CHECK(ctx, std::isfinite(s) && std::isfinite(e),
                     "start (%g) and end (%g) must be finite", s, e);
  EMBER_KERNEL_CHECK(ctx, st != 0.0, "step: must be nonzero");
  EMBER_KERNEL_CHECK(ctx, (st > 0 && e >= s) || (st < 0 && e <= s),
                     "end (%g) is on the wrong side of start (%g) for step %g", e, s, st);
  const bool all_int = !start.is_double() && !end.is_double() && !step.is_double();
  double n = 0;
  if (all_int) {
    const int64_t a = start.scalar_as_int(), b = end.scalar_as_int(),
                  c = step.scalar_as_int();
    // ceil((b - a) / c) exactly in integers.
    int64_t diff = 0;
    EMBER_KERNEL_CHECK(ctx, !__builtin_sub_overflow(b, a, &diff), "end - start overflows int64");
    n = static_cast<double>(diff / c + ((diff % c) != 0 ? 1 : 0));
  } else {
    n = std::ceil((e - s) / st);
  }
  EMBER_KERNEL_CHECK(ctx, n >= 0 && n <= INT32_MAX, "the result would have %g elements", n);
  const int32_t size[1] = {static_cast<int32_t>(n)};
  if (!resize_out(ctx, out, size)) return;
  (void)dispatch_dtype<kRealTypes>(out.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    S* d = out.data_ptr<S>();
    const int64_t stride = out.numel > 0 ? out.strides[0] : 1;
    if constexpr (std::is_integral_v<S>) {
      if (all_int) {
        const int64_t a = start.scalar_as_int(), c = step.scalar_as_int();
        for (int64_t i = 0; i < out.numel; ++i) {
          d[i * stride] = static_cast<S>(static_cast<uint64_t>(a) +
                                         static_cast<uint64_t>(i) * static_cast<uint64_t>(c));
        }
        return;
      }
      // Like PyTorch: start and step are cast to the integer type first (a
      // fractional step may become 0); only the size uses the exact values.
      const int64_t a = static_cast<int64_t>(s), c = static_cast<int64_t>(st);
      for (int64_t i = 0; i < out.numel; ++i) {
        d[i * stride] = static_cast<S>(static_cast<uint64_t>(a) +
                                       static_cast<uint64_t>(i) * static_cast<uint64_t>(c));
      }
    } else {
      for (int64_t i = 0; i < out.numel; ++i) {
        d[i * stride] = convert<S>(static_cast<compute_t<S>>(s + static_cast<double>(i) * st));
      }
    }
  });
}

void empty_out(KernelContext& ctx, IntSpan size, std::optional<int64_t> memory_format,
               Tensor& out) {
  (void)memory_format;  // Out's dim order already is the format.
  int32_t shape[kTensorMaxDim];
  if (!size_to_shape(ctx, size, shape)) return;
  (void)resize_out(ctx, out, {shape, size.size()});
}

void empty_strided_out(KernelContext& ctx, IntSpan size, IntSpan stride, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, stride.size() == size.size(),
                     "stride: %s has %zu entries but size %s has %zu", ShapeStr(stride).c_str(),
                     stride.size(), ShapeStr(size).c_str(), size.size());
  int32_t shape[kTensorMaxDim];
  if (!size_to_shape(ctx, size, shape)) return;
  (void)resize_out(ctx, out, {shape, size.size()});
}

}  // namespace ember::kernels::portable
