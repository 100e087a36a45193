// Extremum and logical reductions without indices:
//   aten::amax.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
//   aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
//   aten::max.unary_out(Tensor self, *, Tensor(a!) out)
//   aten::min.unary_out(Tensor self, *, Tensor(a!) out)
//   aten::any.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out)
//   aten::any.dims_out(Tensor self, int[]? dim=None, bool keepdim=False, *, Tensor(a!) out)
//   aten::any.all_out(Tensor self, *, Tensor(a!) out)
//
// amax/amin/max/min keep self's dtype (all dtypes), propagate NaN and fail on
// an empty reduced dim, as eager does. any gives bool (uint8 for uint8 input);
// the any of nothing is false.
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_amax.h"

namespace ember::kernels::portable {
namespace {

template <bool kMax>
void run_extremum(KernelContext& ctx, const Tensor& self, const ReduceDims& dims, bool keepdim,
                  Tensor& out) {
  if (!check_supported(ctx, self, "self")) return;
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  if (self.numel == 0 && self.dim > 0) {
    bool all = true;
    for (int32_t d = 0; d < self.dim; ++d) all = all && dims.reduced[d];
    if (all) {
      ctx.fail(Error::InvalidArgument,
               "self: cannot reduce an empty tensor of shape %s over every dim (no identity)",
               ShapeStr(self.shape()).c_str());
      return;
    }
  }
  if (!check_nonempty_reduction(ctx, self, dims, "self")) return;
  if (!resize_reduced(ctx, self, dims, keepdim, out)) return;
  if (out.numel == 0) return;
  ReducePlan plan;
  plan.init(self, dims, out);
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    S* o = out.data_ptr<S>();
    auto finish = [o](int64_t off, CT acc) { o[off] = convert<S>(acc); };
    if constexpr (kMax) {
      const CT identity = std::numeric_limits<CT>::has_infinity
                              ? -std::numeric_limits<CT>::infinity()
                              : std::numeric_limits<CT>::lowest();
      auto f = [](CT a, CT b) { return nan_max(a, b); };
      reduce_fold<S, CT>(self, plan, identity, f, f, finish);
    } else {
      const CT identity = std::numeric_limits<CT>::has_infinity
                              ? std::numeric_limits<CT>::infinity()
                              : std::numeric_limits<CT>::max();
      auto f = [](CT a, CT b) { return nan_min(a, b); };
      reduce_fold<S, CT>(self, plan, identity, f, f, finish);
    }
  });
}

template <bool kMax>
void run_max_unary(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (self.numel == 0) {
    ctx.fail(Error::InvalidArgument,
             "self: expected a non-empty tensor (shape %s) for a reduction without dim",
             ShapeStr(self.shape()).c_str());
    return;
  }
  ReduceDims dims;
  reduce_dims_all(self.dim, &dims);
  run_extremum<kMax>(ctx, self, dims, false, out);
}

void run_any(KernelContext& ctx, const Tensor& self, const ReduceDims& dims, bool keepdim,
             Tensor& out) {
  if (!check_supported(ctx, self, "self")) return;
  const ScalarType want = self.dtype == ScalarType::Byte ? ScalarType::Byte : ScalarType::Bool;
  if (!check_dtype(ctx, out, "out", want)) return;
  if (!resize_reduced(ctx, self, dims, keepdim, out)) return;
  if (out.numel == 0) return;
  ReducePlan plan;
  plan.init(self, dims, out);
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto f = [](bool a, bool b) { return a || b; };
    reduce_fold<S, bool>(self, plan, false, f, f, [&](int64_t off, bool acc) {
      store_as<bool>(out.data, out.dtype, off, acc);
    });
  });
}

}  // namespace

void amax_out(KernelContext& ctx, const Tensor& self, IntSpan dim, bool keepdim, Tensor& out) {
  ReduceDims dims;
  if (!reduce_dims_list(ctx, dim, "dim", self.dim, &dims)) return;
  run_extremum<true>(ctx, self, dims, keepdim, out);
}

void amin_out(KernelContext& ctx, const Tensor& self, IntSpan dim, bool keepdim, Tensor& out) {
  ReduceDims dims;
  if (!reduce_dims_list(ctx, dim, "dim", self.dim, &dims)) return;
  run_extremum<false>(ctx, self, dims, keepdim, out);
}

void max_unary_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_max_unary<true>(ctx, self, out);
}

void min_unary_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_max_unary<false>(ctx, self, out);
}

void any_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim, Tensor& out) {
  ReduceDims dims;
  if (!reduce_dims_one(ctx, dim, self.dim, "dim", &dims)) return;
  run_any(ctx, self, dims, keepdim, out);
}

void any_dims_out(KernelContext& ctx, const Tensor& self, std::optional<IntSpan> dim,
                  bool keepdim, Tensor& out) {
  ReduceDims dims;
  if (!reduce_dims_list(ctx, dim, "dim", self.dim, &dims)) return;
  run_any(ctx, self, dims, keepdim, out);
}

void any_all_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  ReduceDims dims;
  reduce_dims_all(self.dim, &dims);
  run_any(ctx, self, dims, false, out);
}

}  // namespace ember::kernels::portable
