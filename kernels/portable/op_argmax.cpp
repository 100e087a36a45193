// Extremum reductions with indices:
//   aten::argmax.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out)
//   aten::argmin.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out)
//   aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values)
//   aten::min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) min, Tensor(b!) min_indices)
//
// Indices are int64 and count along `dim` (argmax without dim: the flat
// row-major index). The first extremum wins; a NaN beats every number and
// the first NaN wins, as in eager. An empty reduced dim fails.
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_argmax.h"

namespace ember::kernels::portable {
namespace {

// Writes, for each output, the extremum (when `values` is set) and its index.
template <bool kMax, typename S>
void arg_extremum(const Tensor& self, const ReducePlan& plan, Tensor* values, Tensor& indices,
                  const ReducePlan* values_plan) {
  using CT = compute_t<S>;
  const S* base = self.data_ptr<const S>();
  int64_t* idx_out = indices.data_ptr<int64_t>();
  auto better = [](CT x, CT best) {
    if (is_nan_value(best)) return false;
    if (is_nan_value(x)) return true;
    return kMax ? x > best : x < best;
  };
  auto reduce_one = [&](int64_t in_off, CT* best_out) {
    int64_t k = 0;
    int64_t best_k = 0;
    CT best = CT{};
    bool first = true;
    plan.for_each_reduced_row(in_off, [&](int64_t off, int64_t n, int64_t s) {
      const S* p = base + off;
      for (int64_t i = 0; i < n; ++i, ++k) {
        const CT x = convert<CT>(p[i * s]);
        if (first || better(x, best)) {
          best = x;
          best_k = k;
          first = false;
        }
      }
    });
    *best_out = best;
    return best_k;
  };
  if (values == nullptr) {
    plan.for_each_output([&](int64_t out_off, int64_t in_off) {
      CT best;
      idx_out[out_off] = reduce_one(in_off, &best);
    });
    return;
  }
  S* val_out = values->data_ptr<S>();
  if (same_layout(*values, indices)) {
    plan.for_each_output([&](int64_t out_off, int64_t in_off) {
      CT best;
      idx_out[out_off] = reduce_one(in_off, &best);
      val_out[out_off] = convert<S>(best);
    });
    return;
  }
  // Different dim orders: each output walks its own plan.
  plan.for_each_output([&](int64_t out_off, int64_t in_off) {
    CT best;
    idx_out[out_off] = reduce_one(in_off, &best);
  });
  values_plan->for_each_output([&](int64_t out_off, int64_t in_off) {
    CT best;
    (void)reduce_one(in_off, &best);
    val_out[out_off] = convert<S>(best);
  });
}

template <bool kMax>
void run_argmax(KernelContext& ctx, const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                Tensor& out) {
  ReduceDims dims;
  const bool flat = !dim.has_value();
  if (flat) {
    reduce_dims_all(self.dim, &dims);
  } else if (!reduce_dims_one(ctx, *dim, self.dim, "dim", &dims)) {
    return;
  }
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", ScalarType::Long)) {
    return;
  }
  if (self.dtype == ScalarType::Bool) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (flat && self.numel == 0) {
    ctx.fail(Error::InvalidArgument, "self: expected a non-empty tensor without dim, got shape %s",
             ShapeStr(self.shape()).c_str());
    return;
  }
  if (!check_nonempty_reduction(ctx, self, dims, "self")) return;
  if (!resize_reduced(ctx, self, dims, keepdim, out)) return;
  if (out.numel == 0) return;
  ReducePlan plan;
  plan.init(self, dims, out);
  (void)dispatch_dtype<kRealTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    arg_extremum<kMax, S>(self, plan, nullptr, out, nullptr);
  });
}

// max.dim_max / min.dim_min: `values` and `indices` carry the schema's names
// (max, max_values / min, min_indices).
template <bool kMax>
void run_max_dim(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim,
                 Tensor& values, Tensor& indices) {
  const char* values_name = kMax ? "max" : "min";
  const char* indices_name = kMax ? "max_values" : "min_indices";
  ReduceDims dims;
  if (!reduce_dims_one(ctx, dim, self.dim, "dim", &dims)) return;
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, values, values_name, self.dtype) ||
      !check_dtype(ctx, indices, indices_name, ScalarType::Long)) {
    return;
  }
  if (!check_nonempty_reduction(ctx, self, dims, "self")) return;
  if (!resize_reduced(ctx, self, dims, keepdim, values) ||
      !resize_reduced(ctx, self, dims, keepdim, indices)) {
    return;
  }
  if (values.numel == 0) return;
  ReducePlan plan;
  plan.init(self, dims, indices);
  ReducePlan values_plan;
  values_plan.init(self, dims, values);
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    arg_extremum<kMax, S>(self, plan, &values, indices, &values_plan);
  });
}

}  // namespace

void argmax_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                Tensor& out) {
  run_argmax<true>(ctx, self, dim, keepdim, out);
}

void argmin_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                Tensor& out) {
  run_argmax<false>(ctx, self, dim, keepdim, out);
}

void max_dim_max(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& max,
                 Tensor& max_values) {
  run_max_dim<true>(ctx, self, dim, keepdim, max, max_values);
}

void min_dim_min(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& min,
                 Tensor& min_indices) {
  run_max_dim<false>(ctx, self, dim, keepdim, min, min_indices);
}

}  // namespace ember::kernels::portable
