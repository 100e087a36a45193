// aten::cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
// aten::cumprod.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
//
// The result dtype is `dtype` when given, else out's dtype (int64 for
// integral and bool input, as eager promotes). Floating results accumulate in
// float64, integral ones in int64 with wrap-around. Any dim orders.
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_cumsum.h"

namespace ember::kernels::portable {
namespace {

enum class Scan { kSum, kProd };

template <Scan kScan, typename S, typename Acc>
void run_scan(const Tensor& self, const ScanPlan& scan, Tensor& out) {
  const ReducePlan& plan = scan.plan;
  const int64_t len = scan.len, in_step = scan.in_step, out_step = scan.out_step;
  const S* base = self.data_ptr<const S>();
  plan.for_each_output([&](int64_t out_off, int64_t in_off) {
    Acc acc = kScan == Scan::kSum ? Acc(0) : Acc(1);
    for (int64_t i = 0; i < len; ++i) {
      const Acc v = convert<Acc>(base[in_off + i * in_step]);
      acc = kScan == Scan::kSum ? wrap_add(acc, v) : wrap_mul(acc, v);
      store_as<Acc>(out.data, out.dtype, out_off + i * out_step, acc);
    }
  });
}

template <Scan kScan>
void run_scan_op(KernelContext& ctx, const Tensor& self, int64_t dim_arg,
                 std::optional<int64_t> dtype_arg, Tensor& out) {
  int32_t dim = 0;
  if (!normalize_dim(ctx, dim_arg, self.dim, "dim", &dim)) return;
  ScalarType dtype = out.dtype;
  bool has_dtype = false;
  if (!optional_dtype(ctx, dtype_arg, "dtype", &dtype, &has_dtype)) return;
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out")) return;
  if (has_dtype && !check_dtype(ctx, out, "out", dtype)) return;
  if (!has_dtype && !can_cast(self.dtype, out.dtype)) {
    ctx.fail(Error::InvalidArgument, "out: dtype %s cannot hold the %s of input dtype %s",
             scalar_type_name(out.dtype), kScan == Scan::kSum ? "cumsum" : "cumprod",
             scalar_type_name(self.dtype));
    return;
  }
  if (!resize_out(ctx, out, self.shape())) return;
  if (out.numel == 0) return;
  ScanPlan scan;
  scan_plan(self, dim, out, &scan);
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (is_floating_type(out.dtype)) {
      run_scan<kScan, S, double>(self, scan, out);
    } else {
      // A float input cast to an integral dtype truncates first, as eager does.
      run_scan<kScan, S, int64_t>(self, scan, out);
    }
  });
}

}  // namespace

void cumsum_out(KernelContext& ctx, const Tensor& self, int64_t dim, std::optional<int64_t> dtype,
                Tensor& out) {
  run_scan_op<Scan::kSum>(ctx, self, dim, dtype, out);
}

void cumprod_out(KernelContext& ctx, const Tensor& self, int64_t dim,
                 std::optional<int64_t> dtype, Tensor& out) {
  run_scan_op<Scan::kProd>(ctx, self, dim, dtype, out);
}

}  // namespace ember::kernels::portable
