// Sum, mean and product reductions:
//   aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out)
//   aten::sum.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
//   aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out)
//   aten::mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
//   aten::prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out)
//   aten::prod.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
//
// The result dtype is `dtype` when given, else out's dtype (as eager's out
// overloads do); it must then equal `dtype`. A float32/float64 sum or mean
// of contiguous rows (the reduced elements of each output are one unit-stride
// run, e.g. mean over H,W of NCHW) adds in eager's order (cascade_sum.h), so
// it is bit-identical to eager and mean is that sum divided by the count in
// the same dtype. Other floating results accumulate in float64 (also for the
// 16-bit floats), integral results in int64 with wrap-around. An empty
// reduction gives 0 (sum), NaN (mean), 1 (prod).
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/cascade_sum.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_sum.h"

namespace ember::kernels::portable {
namespace {

enum class Fold { Sum, Mean, Prod };

// True when every output's reduced elements form one unit-stride run.
bool contiguous_rows(const ReducePlan& plan) {
  return plan.red_dim == 0 || (plan.red_dim == 1 && plan.red_strides[0] == 1);
}

// Sum or mean of T rows in eager's order, T the input and result dtype.
template <typename T, Fold kFold>
void fold_rows_in_eager_order(const Tensor& self, const ReducePlan& plan, Tensor& out) {
  const T* in = self.data_ptr<const T>();
  T* o = out.data_ptr<T>();
  plan.for_each_output_row([&](int64_t out_off, int64_t in_off, int64_t rows, int64_t out_st,
                               int64_t in_st) {
    cascade_sum_rows(in + in_off, plan.reduce_numel, rows, in_st, o + out_off, out_st,
                     kFold == Fold::Mean);
  });
}

template <Fold kFold>
void run_fold(KernelContext& ctx, const Tensor& self, const ReduceDims& dims, bool keepdim,
              std::optional<int64_t> dtype_arg, Tensor& out) {
  ScalarType dtype = out.dtype;
  bool has_dtype = false;
  if (!optional_dtype(ctx, dtype_arg, "dtype", &dtype, &has_dtype)) return;
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out")) return;
  if (has_dtype && !check_dtype(ctx, out, "out", dtype)) return;
  if (kFold == Fold::Mean && !is_floating_type(out.dtype)) {
    ctx.fail(Error::InvalidArgument,
             "out: mean needs a floating result dtype, got %s (input dtype %s)",
             scalar_type_name(out.dtype), scalar_type_name(self.dtype));
    return;
  }
  if (!has_dtype && !is_floating_type(out.dtype) && is_floating_type(self.dtype)) {
    ctx.fail(Error::InvalidArgument, "out: dtype %s cannot hold the %s result of input dtype %s",
             scalar_type_name(out.dtype), kFold == Fold::Prod ? "prod" : "sum",
             scalar_type_name(self.dtype));
    return;
  }
  if (!resize_reduced(ctx, self, dims, keepdim, out)) return;
  if (out.numel == 0) return;
  ReducePlan plan;
  plan.init(self, dims, out);
  if constexpr (kFold != Fold::Prod) {
    if (self.dtype == out.dtype && contiguous_rows(plan)) {
      if (out.dtype == ScalarType::Float) {
        fold_rows_in_eager_order<float, kFold>(self, plan, out);
        return;
      }
      if (out.dtype == ScalarType::Double) {
        fold_rows_in_eager_order<double, kFold>(self, plan, out);
        return;
      }
    }
  }
  const bool float_acc = is_floating_type(out.dtype);
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (float_acc) {
      const double count = static_cast<double>(plan.reduce_numel);
      auto finish = [&](int64_t off, double acc) {
        store_as<double>(out.data, out.dtype, off, kFold == Fold::Mean ? acc / count : acc);
      };
      if constexpr (kFold == Fold::Prod) {
        reduce_fold<S, double>(
            self, plan, 1.0, [](double a, double x) { return a * x; },
            [](double a, double b) { return a * b; }, finish);
      } else {
        reduce_fold<S, double>(
            self, plan, 0.0, [](double a, double x) { return a + x; },
            [](double a, double b) { return a + b; }, finish);
      }
    } else {
      // A float input with an integral dtype truncates each element first.
      auto finish = [&](int64_t off, int64_t acc) { store_as<int64_t>(out.data, out.dtype, off, acc); };
      if constexpr (kFold == Fold::Prod) {
        auto mul = [](int64_t a, int64_t b) { return wrap_mul(a, b); };
        reduce_fold<S, int64_t>(self, plan, int64_t{1}, mul, mul, finish);
      } else {
        auto add = [](int64_t a, int64_t b) { return wrap_add(a, b); };
        reduce_fold<S, int64_t>(self, plan, int64_t{0}, add, add, finish);
      }
    }
  });
}

// A reduction over `dim` (None or [] reduces every dim).
template <Fold kFold>
void fold_dims(KernelContext& ctx, const Tensor& self, std::optional<IntSpan> dim, bool keepdim,
               std::optional<int64_t> dtype, Tensor& out) {
  ReduceDims dims;
  if (!reduce_dims_list(ctx, dim, "dim", self.dim, &dims)) return;
  run_fold<kFold>(ctx, self, dims, keepdim, dtype, out);
}

// A full reduction to a 0-dim tensor.
template <Fold kFold>
void fold_all(KernelContext& ctx, const Tensor& self, std::optional<int64_t> dtype, Tensor& out) {
  ReduceDims dims;
  reduce_dims_all(self.dim, &dims);
  run_fold<kFold>(ctx, self, dims, false, dtype, out);
}

}  // namespace

void sum_IntList_out(KernelContext& ctx, const Tensor& self, std::optional<IntSpan> dim,
                     bool keepdim, std::optional<int64_t> dtype, Tensor& out) {
  fold_dims<Fold::Sum>(ctx, self, dim, keepdim, dtype, out);
}

void sum_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> dtype, Tensor& out) {
  fold_all<Fold::Sum>(ctx, self, dtype, out);
}

void mean_out(KernelContext& ctx, const Tensor& self, std::optional<IntSpan> dim, bool keepdim,
              std::optional<int64_t> dtype, Tensor& out) {
  fold_dims<Fold::Mean>(ctx, self, dim, keepdim, dtype, out);
}

void mean_dtype_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> dtype,
                    Tensor& out) {
  fold_all<Fold::Mean>(ctx, self, dtype, out);
}

void prod_int_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim,
                  std::optional<int64_t> dtype, Tensor& out) {
  ReduceDims dims;
  if (!reduce_dims_one(ctx, dim, self.dim, "dim", &dims)) return;
  run_fold<Fold::Prod>(ctx, self, dims, keepdim, dtype, out);
}

void prod_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> dtype, Tensor& out) {
  fold_all<Fold::Prod>(ctx, self, dtype, out);
}

}  // namespace ember::kernels::portable
