// aten::logcumsumexp.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)
//
// out[i] = log(sum_{j <= i} exp(self[j])) along dim, accumulated in float64
// one element at a time as log-add-exp: max + log1p(exp(min - max)), which
// neither overflows nor underflows; two equal infinities add to themselves
// (-inf stays -inf before the first finite value, +inf stays +inf), a NaN
// makes the rest NaN. Floating dtypes (out the same dtype as self); any dim
// order.
#include <cmath>

#include "kernels/generated/functions/portable/op_logcumsumexp.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/reduce.h"

namespace ember::kernels::portable {
namespace {

double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  const double lo = a < b ? a : b;
  const double hi = a < b ? b : a;
  if (lo == hi && !std::isfinite(lo)) return lo;  // -inf + -inf, +inf + +inf
  return hi + std::log1p(std::exp(lo - hi));
}

template <typename S>
void run_logcumsumexp(const Tensor& self, const ScanPlan& scan, Tensor& out) {
  const ReducePlan& plan = scan.plan;
  const int64_t len = scan.len, in_step = scan.in_step, out_step = scan.out_step;
  const S* x = self.data_ptr<const S>();
  S* o = out.data_ptr<S>();
  plan.for_each_output([&](int64_t out_off, int64_t in_off) {
    double acc = -INFINITY;
    for (int64_t i = 0; i < len; ++i) {
      acc = log_add_exp(acc, convert<double>(x[in_off + i * in_step]));
      o[out_off + i * out_step] = convert<S>(acc);
    }
  });
}

}  // namespace

void logcumsumexp_out(KernelContext& ctx, const Tensor& self, int64_t dim_arg, Tensor& out) {
  int32_t dim = 0;
  if (!normalize_dim(ctx, dim_arg, self.dim == 0 ? 1 : self.dim, "dim", &dim)) return;
  if (!is_floating_type(self.dtype)) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype) || !resize_out(ctx, out, self.shape())) return;
  if (self.numel == 0) return;
  ScanPlan scan;
  scan_plan(self, dim, out, &scan);
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    run_logcumsumexp<S>(self, scan, out);
  });
}

}  // namespace ember::kernels::portable
