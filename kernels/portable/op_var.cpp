// Variance:
//   aten::var.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None,
//       bool keepdim=False, Tensor(a!) out)
//   aten::var.out(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False, *, Tensor(a!) out)
// Floating dtypes; out has self's dtype.
//
// Two passes in float64 per output (mean, then the sum of squared
// deviations), which is at least as accurate as eager's Welford. The divisor
// is max(0, N - correction): no elements, or no more than `correction`, give
// NaN or Inf as in eager.
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_var.h"

namespace ember::kernels::portable {
namespace {

void run_var(KernelContext& ctx, const Tensor& self, const ReduceDims& dims, double correction,
             bool keepdim, Tensor& out) {
  if (!is_floating_type(self.dtype)) {
    ctx.fail(Error::InvalidArgument, "self: var needs a floating dtype, got %s",
             scalar_type_name(self.dtype));
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  if (!resize_reduced(ctx, self, dims, keepdim, out)) return;
  if (out.numel == 0) return;
  ReducePlan plan;
  plan.init(self, dims, out);
  const double count = static_cast<double>(plan.reduce_numel);
  double divisor = count - correction;
  if (divisor < 0) divisor = 0;
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* base = self.data_ptr<const S>();
    S* o = out.data_ptr<S>();
    auto add = [](double a, double b) { return a + b; };
    plan.for_each_output([&](int64_t out_off, int64_t in_off) {
      double sum = 0;
      plan.for_each_reduced_row(in_off, [&](int64_t off, int64_t n, int64_t s) {
        sum += reduce_row<double>(base + off, n, s, 0.0, add, add);
      });
      const double mean = sum / count;
      double sq = 0;
      plan.for_each_reduced_row(in_off, [&](int64_t off, int64_t n, int64_t s) {
        const S* p = base + off;
        for (int64_t i = 0; i < n; ++i) {
          const double d = convert<double>(p[i * s]) - mean;
          sq += d * d;
        }
      });
      o[out_off] = convert<S>(sq / divisor);
    });
  });
}

}  // namespace

void var_correction_out(KernelContext& ctx, const Tensor& self, std::optional<IntSpan> dim,
                        const EValue* correction, bool keepdim, Tensor& out) {
  ReduceDims dims;
  if (!reduce_dims_list(ctx, dim, "dim", self.dim, &dims)) return;
  run_var(ctx, self, dims, correction ? correction->scalar_as_double() : 1.0, keepdim, out);
}

void var_out(KernelContext& ctx, const Tensor& self, std::optional<IntSpan> dim, bool unbiased,
             bool keepdim, Tensor& out) {
  ReduceDims dims;
  if (!reduce_dims_list(ctx, dim, "dim", self.dim, &dims)) return;
  run_var(ctx, self, dims, unbiased ? 1.0 : 0.0, keepdim, out);
}

}  // namespace ember::kernels::portable
