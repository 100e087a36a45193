// aten::cummax.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices)
// aten::cummin.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices)
//
// values[i] = the max (min) of self[0..i] along dim; indices[i] its position.
// As eager: a tie moves the index to the later element (>=, <=); a NaN takes
// the place and keeps it (later numbers never replace it, a later NaN does).
// Every dtype of self; values in self's dtype, indices int64; any dim order
// (values and indices share their layout, as a planned pair of outs does).
#include "kernels/generated/functions/portable/op_cummax_cummin.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/reduce.h"

namespace ember::kernels::portable {
namespace {

enum class Extremum { kMax, kMin };

template <Extremum kWhich, typename S>
void run_cum_extremum(const Tensor& self, const ScanPlan& scan, Tensor& values, Tensor& indices) {
  const ReducePlan& plan = scan.plan;
  const int64_t len = scan.len, in_step = scan.in_step, out_step = scan.out_step;
  using CT = compute_t<S>;
  const S* x = self.data_ptr<const S>();
  S* v = values.data_ptr<S>();
  int64_t* ix = indices.data_ptr<int64_t>();
  plan.for_each_output([&](int64_t out_off, int64_t in_off) {
    CT best = convert<CT>(x[in_off]);
    int64_t at = 0;
    for (int64_t i = 0; i < len; ++i) {
      const CT e = convert<CT>(x[in_off + i * in_step]);
      const bool better = kWhich == Extremum::kMax ? e >= best : e <= best;
      if (is_nan_value(e) || (!is_nan_value(best) && better)) {
        best = e;
        at = i;
      }
      v[out_off + i * out_step] = convert<S>(best);
      ix[out_off + i * out_step] = at;
    }
  });
}

template <Extremum kWhich>
void cum_extremum_out(KernelContext& ctx, const Tensor& self, int64_t dim_arg, Tensor& values,
                      Tensor& indices) {
  int32_t dim = 0;
  if (!normalize_dim(ctx, dim_arg, self.dim == 0 ? 1 : self.dim, "dim", &dim)) return;
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, values, "values", self.dtype) ||
      !check_dtype(ctx, indices, "indices", ScalarType::Long)) {
    return;
  }
  if (!resize_out(ctx, values, self.shape()) || !resize_out(ctx, indices, self.shape())) return;
  if (self.numel == 0) return;
  for (int32_t d = 0; d < self.dim; ++d) {
    EMBER_KERNEL_CHECK(ctx, values.strides[d] == indices.strides[d],
                       "values and indices must share a layout (dim %d: strides %lld and %lld)",
                       d, static_cast<long long>(values.strides[d]),
                       static_cast<long long>(indices.strides[d]));
  }
  ScanPlan scan;
  scan_plan(self, dim, values, &scan);
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    run_cum_extremum<kWhich, S>(self, scan, values, indices);
  });
}

}  // namespace

void cummax_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& values,
                Tensor& indices) {
  cum_extremum_out<Extremum::kMax>(ctx, self, dim, values, indices);
}

void cummin_out(KernelContext& ctx, const Tensor& self, int64_t dim, Tensor& values,
                Tensor& indices) {
  cum_extremum_out<Extremum::kMin>(ctx, self, dim, values, indices);
}

}  // namespace ember::kernels::portable
