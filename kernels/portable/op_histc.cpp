// aten::histc.out(Tensor self, int bins=100, Scalar min=0, Scalar max=0, *,
//     Tensor(a!) out) -> Tensor(a!)
//
// A histogram of self's elements over `bins` equal-width bins of [min, max];
// out (self's dtype, shape [bins]) holds the counts. As eager:
//   * min == max: the range is self's own min and max (an empty self keeps
//     them); a range of one value becomes [v - 1, v + 1];
//   * elements outside the range and NaNs are not counted; an element equal
//     to max goes into the last bin;
//   * the bin of x is trunc((x - min) * bins / (max - min)), evaluated left to
//     right in self's dtype, each step rounded to it (16-bit floats too):
//     elements on a bin edge land where eager puts them (established
//     black-box, tested).
// Floating dtypes only; min > max or a non-finite range is an error.
#include <cmath>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/dtype.h"
#include "kernels/generated/functions/portable/op_histc.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
void run_histc(KernelContext& ctx, const Tensor& self, int64_t bins, double min_arg,
               double max_arg, Tensor& out) {
  using CT = compute_t<S>;
  const S* x = self.data_ptr<const S>();
  // The bounds in self's dtype first, as eager reads them.
  CT lo = convert<CT>(convert<S>(min_arg)), hi = convert<CT>(convert<S>(max_arg));
  if (lo == hi && self.numel > 0) {
    lo = hi = convert<CT>(x[0]);
    bool nan = std::isnan(lo);
    for (int64_t i = 1; i < self.numel && !nan; ++i) {
      const CT v = convert<CT>(x[i]);
      nan = std::isnan(v);
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (nan) lo = hi = static_cast<CT>(NAN);  // a NaN poisons the range, as in eager
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  EMBER_KERNEL_CHECK(ctx, std::isfinite(lo) && std::isfinite(hi),
                     "range of [%g, %g] is not finite", static_cast<double>(lo),
                     static_cast<double>(hi));
  S* counts = out.data_ptr<S>();
  for (int64_t b = 0; b < bins; ++b) counts[b] = convert<S>(CT(0));
  // Each step rounds to self's dtype (a no-op for float and double): eager
  // computes the bin in the 16-bit type itself.
  const auto rounded = [](CT v) { return convert<CT>(convert<S>(v)); };
  const CT width = rounded(hi - lo);
  const CT n = rounded(static_cast<CT>(bins));
  for (int64_t i = 0; i < self.numel; ++i) {
    const CT v = convert<CT>(x[i]);
    if (!(v >= lo && v <= hi)) continue;  // NaN fails both
    int64_t b = static_cast<int64_t>(rounded(rounded(rounded(v - lo) * n) / width));
    if (b >= bins) b = bins - 1;
    counts[b] = convert<S>(convert<CT>(counts[b]) + CT(1));
  }
}

}  // namespace

void histc_out(KernelContext& ctx, const Tensor& self, int64_t bins, const EValue& min,
               const EValue& max, Tensor& out) {
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  EMBER_KERNEL_CHECK(ctx, is_floating_type(self.dtype),
                     "self: histc takes a floating tensor, got %s",
                     scalar_type_name(self.dtype));
  EMBER_KERNEL_CHECK(ctx, bins > 0 && bins <= INT32_MAX, "bins: must be > 0, got %lld",
                     static_cast<long long>(bins));
  const double lo = min.scalar_as_double(), hi = max.scalar_as_double();
  EMBER_KERNEL_CHECK(ctx, !(lo > hi), "max must be larger than min (min %g, max %g)", lo, hi);
  const int32_t shape[1] = {static_cast<int32_t>(bins)};
  if (!resize_out(ctx, out, shape)) return;
  if (!dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
        run_histc<typename decltype(tag)::type>(ctx, self, bins, lo, hi, out);
      })) {
    fail_dtype(ctx, "self", self.dtype);
  }
}

}  // namespace ember::kernels::portable
