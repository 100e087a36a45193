// Extremum and logical reductions without indices:
//   aten::amax.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
//   aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
//   aten::max.unary_out(Tensor self, *, Tensor(a!) out)
//   aten::min.unary_out(Tensor self, *, Tensor(a!) out)
//   aten::any.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out)
//   aten::any.dims_out(Tensor self, int[]? dim=None, bool keepdim=False, *, Tensor(a!) out)
//   aten::any.all_out(Tensor self, *, Tensor(a!) out)
// each followed by out(return).
//
// amax/amin/max/min keep self's dtype (all dtypes), propagate NaN and fail on
// an empty reduced dim, as eager does. any gives bool (uint8 for uint8 input);
// the any of nothing is false.
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/reduce.h"
#include "runtime/kernel/kernel_registry.h"

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
void amax_out(KernelContext& ctx, EValue** args) {
  ReductionArgs r;
  if (!reduction_args(ctx, args, DimArg::kList, 3, &r)) return;
  run_extremum<kMax>(ctx, *r.self, r.dims, r.keepdim, *r.out);
}

template <bool kMax>
void max_unary_out(KernelContext& ctx, EValue** args) {
  ReductionArgs r;
  if (!reduction_args(ctx, args, DimArg::kNone, 1, &r)) return;
  if (r.self->numel == 0) {
    ctx.fail(Error::InvalidArgument,
             "self: expected a non-empty tensor (shape %s) for a reduction without dim",
             ShapeStr(r.self->shape()).c_str());
    return;
  }
  run_extremum<kMax>(ctx, *r.self, r.dims, false, *r.out);
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

void any_dim_out(KernelContext& ctx, EValue** args) {
  ReductionArgs r;
  if (!reduction_args(ctx, args, DimArg::kInt, 3, &r)) return;
  run_any(ctx, *r.self, r.dims, r.keepdim, *r.out);
}

void any_dims_out(KernelContext& ctx, EValue** args) {
  ReductionArgs r;
  if (!reduction_args(ctx, args, DimArg::kList, 3, &r)) return;
  run_any(ctx, *r.self, r.dims, r.keepdim, *r.out);
}

void any_all_out(KernelContext& ctx, EValue** args) {
  ReductionArgs r;
  if (!reduction_args(ctx, args, DimArg::kNone, 1, &r)) return;
  run_any(ctx, *r.self, r.dims, r.keepdim, *r.out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::amax.out", amax_out<true>, 5);
EMBER_REGISTER_KERNEL("aten::amin.out", amax_out<false>, 5);
EMBER_REGISTER_KERNEL("aten::max.unary_out", max_unary_out<true>, 3);
EMBER_REGISTER_KERNEL("aten::min.unary_out", max_unary_out<false>, 3);
EMBER_REGISTER_KERNEL("aten::any.out", any_dim_out, 5);
EMBER_REGISTER_KERNEL("aten::any.dims_out", any_dims_out, 5);
EMBER_REGISTER_KERNEL("aten::any.all_out", any_all_out, 3);

}  // namespace ember::kernels::portable
