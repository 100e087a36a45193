// Order-statistic reductions along one dim (or over every element):
//   aten::kthvalue.values(Tensor self, int k, int dim=-1, bool keepdim=False, *,
//       Tensor(a!) values, Tensor(b!) indices)
//   aten::median.out(Tensor self, *, Tensor(a!) out)
//   aten::median.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values,
//       Tensor(b!) indices)
//   aten::nanmedian.out / aten::nanmedian.dim_values (the same arguments)
//   aten::mode.values(Tensor self, int dim=-1, bool keepdim=False, *, Tensor(a!) values,
//       Tensor(b!) indices)
//
// Rules (eager's): values sort with NaN above every number. kthvalue is the
// k-th smallest (1-based). median is the lower median, the ((n-1)/2)-th
// smallest; a row with a NaN has median NaN at the index of its first NaN.
// nanmedian is the median of the row's numbers (NaN when the row has none, at
// its first index; eager's index there comes from its selection); median/nanmedian over every element of an empty
// tensor are NaN (integers: eager's NaN cast, see run_all_median). mode is
// the most frequent value, the smallest of equally frequent ones, at the
// index of its last occurrence (eager's on short rows; its docs leave it
// unspecified); NaNs count as one value above every number (eager's sort
// leaves rows with NaN unspecified). Equal values are ordered by index, so
// which of several equal elements is returned is deterministic (eager leaves
// it unspecified). kthvalue/median: real dtypes; mode: bool too.
//
// Working memory: a (value, index) copy of one row (or of every element) in
// the method's scratch, reserved at prepare for the planned (upper-bound)
// sizes; std::nth_element and std::sort work in place and allocate nothing.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_kthvalue_median_mode.h"

namespace ember::kernels::portable {
namespace {

// One element of a working row; 16 bytes for every compute type.
template <typename CT>
struct Entry {
  CT v;
  int64_t i;
};
constexpr size_t kEntryBytes = 16;

// NaN above numbers, then value, then index: a strict total order.
template <typename CT>
struct Before {
  bool operator()(const Entry<CT>& a, const Entry<CT>& b) const {
    const bool na = is_nan_value(a.v), nb = is_nan_value(b.v);
    if (na != nb) return nb;
    if (!na && a.v != b.v) return a.v < b.v;
    return a.i < b.i;
  }
};

template <typename CT>
bool same_value(CT a, CT b) {
  return a == b || (is_nan_value(a) && is_nan_value(b));
}

enum class Stat { kKth, kMedian, kNanMedian, kMode };

// Fills `row` from self[in_off + j * step], j < n; returns the index of the
// first NaN (-1 when none) and the count of NaNs.
template <typename S, typename CT = compute_t<S>>
int64_t load_row(const S* x, int64_t in_off, int64_t n, int64_t step, Entry<CT>* row,
                 int64_t* nans) {
  int64_t first_nan = -1;
  *nans = 0;
  for (int64_t j = 0; j < n; ++j) {
    const CT v = convert<CT>(x[in_off + j * step]);
    row[j] = Entry<CT>{v, j};
    if (is_nan_value(v)) {
      if (first_nan < 0) first_nan = j;
      ++*nans;
    }
  }
  return first_nan;
}

// The statistic of one loaded row of n >= 1 elements (k: 0-based rank for kKth).
template <Stat kStat, typename CT>
Entry<CT> row_stat(Entry<CT>* row, int64_t n, int64_t k, int64_t first_nan, int64_t nans) {
  const Before<CT> before;
  if constexpr (kStat == Stat::kMode) {
    std::sort(row, row + n, before);
    Entry<CT> best = row[n - 1];
    int64_t best_count = 0, count = 0;
    for (int64_t j = 0; j < n; ++j) {
      ++count;
      // NaNs (sorted last) form one run: NaN is a value like the others.
      if (j == n - 1 || !same_value(row[j].v, row[j + 1].v)) {
        if (count > best_count) {  // Strict: the smallest of equally frequent values.
          best = row[j];           // Runs are in index order: the last occurrence.
          best_count = count;
        }
        count = 0;
      }
    }
    return best;
  } else {
    if (kStat == Stat::kMedian && first_nan >= 0) return row[first_nan];
    if (kStat == Stat::kNanMedian) {
      if (nans == n) return row[first_nan];
      k = (n - nans - 1) / 2;
    } else if (kStat == Stat::kMedian) {
      k = (n - 1) / 2;
    }
    std::nth_element(row, row + k, row + n, before);
    return row[k];
  }
}

// Checks values/indices, resizes them and runs the statistic along `dim`.
template <Stat kStat>
void run_dim_stat(KernelContext& ctx, const Tensor& self, int64_t k, int64_t dim_arg,
                  bool keepdim, Tensor& values, Tensor& indices) {
  ReduceDims dims;
  if (!reduce_dims_one(ctx, dim_arg, self.dim, "dim", &dims)) return;
  int32_t dim = 0;
  if (!normalize_dim(ctx, dim_arg, self.dim == 0 ? 1 : self.dim, "dim", &dim)) return;
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, values, "values", self.dtype) ||
      !check_dtype(ctx, indices, "indices", ScalarType::Long)) {
    return;
  }
  const int64_t len = self.dim == 0 ? 1 : self.sizes[dim];
  if constexpr (kStat == Stat::kKth) {
    EMBER_KERNEL_CHECK(ctx, k >= 1 && k <= len,
                       "k: %lld is out of range [1, %lld] for dim %d of self, shape %s",
                       static_cast<long long>(k), static_cast<long long>(len), dim,
                       ShapeStr(self.shape()).c_str());
  }
  if (!check_nonempty_reduction(ctx, self, dims, "self")) return;
  if (!resize_reduced(ctx, self, dims, keepdim, values) ||
      !resize_reduced(ctx, self, dims, keepdim, indices)) {
    return;
  }
  if (values.numel == 0) return;
  void* scratch = ctx.scratch(static_cast<size_t>(len) * kEntryBytes);
  EMBER_KERNEL_CHECK(ctx, scratch != nullptr,
                     "scratch: %lld bytes for a row of %lld elements were not reserved (was the "
                     "prepare step run?)",
                     static_cast<long long>(len * static_cast<int64_t>(kEntryBytes)),
                     static_cast<long long>(len));
  const int64_t step = self.dim == 0 ? 0 : self.strides[dim];
  ReducePlan plan;
  plan.init(self, dims, indices);
  ReducePlan values_plan;
  const bool shared = same_layout(values, indices);
  if (!shared) values_plan.init(self, dims, values);
  constexpr uint32_t kSet = kStat == Stat::kMode ? kAllTypes : kRealTypes;
  const bool ok = dispatch_dtype<kSet>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    auto* row = static_cast<Entry<CT>*>(scratch);
    const S* x = self.data_ptr<const S>();
    S* v = values.data_ptr<S>();
    int64_t* ix = indices.data_ptr<int64_t>();
    auto stat_at = [&](int64_t in_off) {
      int64_t nans = 0;
      const int64_t first_nan = load_row<S>(x, in_off, len, step, row, &nans);
      return row_stat<kStat, CT>(row, len, k - 1, first_nan, nans);
    };
    plan.for_each_output([&](int64_t out_off, int64_t in_off) {
      const Entry<CT> e = stat_at(in_off);
      ix[out_off] = e.i;
      if (shared) v[out_off] = convert<S>(e.v);
    });
    if (!shared) {
      values_plan.for_each_output(
          [&](int64_t out_off, int64_t in_off) { v[out_off] = convert<S>(stat_at(in_off).v); });
    }
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

// median / nanmedian over every element: a 0-d out.
template <Stat kStat>
void run_all_median(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!check_supported(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype)) return;
  if (!resize_out(ctx, out, {})) return;
  const bool ok = dispatch_dtype<kRealTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    S* o = out.data_ptr<S>();
    if (self.numel == 0) {
      // Eager's answer for no elements: NaN, and for integers NaN cast as
      // x86 does (the lowest 32/64-bit value, 0 for the narrower ones).
      if constexpr (std::is_integral_v<CT>) {
        *o = sizeof(CT) >= 4 ? std::numeric_limits<CT>::min() : CT{0};
      } else {
        *o = convert<S>(std::numeric_limits<CT>::quiet_NaN());
      }
      return;
    }
    auto* row = static_cast<Entry<CT>*>(ctx.scratch(static_cast<size_t>(self.numel) * kEntryBytes));
    if (row == nullptr) {
      ctx.fail(Error::InvalidState,
               "scratch: %lld bytes for %lld elements were not reserved (was the prepare step "
               "run?)",
               static_cast<long long>(self.numel * static_cast<int64_t>(kEntryBytes)),
               static_cast<long long>(self.numel));
      return;
    }
    ReduceDims dims;
    reduce_dims_all(self.dim, &dims);
    ReducePlan plan;
    plan.init(self, dims, out);
    const S* x = self.data_ptr<const S>();
    int64_t n = 0, nans = 0, first_nan = -1;
    plan.for_each_reduced_row(0, [&](int64_t off, int64_t m, int64_t s) {
      for (int64_t j = 0; j < m; ++j, ++n) {
        const CT v = convert<CT>(x[off + j * s]);
        row[n] = Entry<CT>{v, n};
        if (is_nan_value(v)) {
          if (first_nan < 0) first_nan = n;
          ++nans;
        }
      }
    });
    *o = convert<S>(row_stat<kStat, CT>(row, n, 0, first_nan, nans).v);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

// The working row: the reduced dim's planned (upper-bound) length.
Error reserve_row(KernelPrepareContext& ctx, const Tensor& self, int64_t dim) {
  if (self.dim == 0) {
    ctx.reserve_scratch(kEntryBytes);
    return Error::Ok;
  }
  const int64_t d = dim < 0 ? dim + self.dim : dim;
  if (d < 0 || d >= self.dim) {
    return ctx.fail(Error::InvalidArgument, "dim: %lld is out of range for self of rank %d",
                    static_cast<long long>(dim), self.dim);
  }
  ctx.reserve_scratch(static_cast<size_t>(self.sizes[d]) * kEntryBytes);
  return Error::Ok;
}

}  // namespace

Error kthvalue_values_prepare(KernelPrepareContext& ctx, const Tensor& self, int64_t k,
                              int64_t dim, bool keepdim, Tensor& values, Tensor& indices) {
  (void)k, (void)keepdim, (void)values, (void)indices;
  return reserve_row(ctx, self, dim);
}
void kthvalue_values(KernelContext& ctx, const Tensor& self, int64_t k, int64_t dim,
                     bool keepdim, Tensor& values, Tensor& indices) {
  run_dim_stat<Stat::kKth>(ctx, self, k, dim, keepdim, values, indices);
}

Error median_dim_values_prepare(KernelPrepareContext& ctx, const Tensor& self, int64_t dim,
                                bool keepdim, Tensor& values, Tensor& indices) {
  (void)keepdim, (void)values, (void)indices;
  return reserve_row(ctx, self, dim);
}
void median_dim_values(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim,
                       Tensor& values, Tensor& indices) {
  run_dim_stat<Stat::kMedian>(ctx, self, 0, dim, keepdim, values, indices);
}

Error nanmedian_dim_values_prepare(KernelPrepareContext& ctx, const Tensor& self, int64_t dim,
                                   bool keepdim, Tensor& values, Tensor& indices) {
  (void)keepdim, (void)values, (void)indices;
  return reserve_row(ctx, self, dim);
}
void nanmedian_dim_values(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim,
                          Tensor& values, Tensor& indices) {
  run_dim_stat<Stat::kNanMedian>(ctx, self, 0, dim, keepdim, values, indices);
}

Error mode_values_prepare(KernelPrepareContext& ctx, const Tensor& self, int64_t dim,
                          bool keepdim, Tensor& values, Tensor& indices) {
  (void)keepdim, (void)values, (void)indices;
  return reserve_row(ctx, self, dim);
}
void mode_values(KernelContext& ctx, const Tensor& self, int64_t dim, bool keepdim,
                 Tensor& values, Tensor& indices) {
  run_dim_stat<Stat::kMode>(ctx, self, 0, dim, keepdim, values, indices);
}

Error median_out_prepare(KernelPrepareContext& ctx, const Tensor& self, Tensor& out) {
  (void)out;
  ctx.reserve_scratch(static_cast<size_t>(self.numel) * kEntryBytes);
  return Error::Ok;
}
void median_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_all_median<Stat::kMedian>(ctx, self, out);
}

Error nanmedian_out_prepare(KernelPrepareContext& ctx, const Tensor& self, Tensor& out) {
  (void)out;
  ctx.reserve_scratch(static_cast<size_t>(self.numel) * kEntryBytes);
  return Error::Ok;
}
void nanmedian_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  run_all_median<Stat::kNanMedian>(ctx, self, out);
}

}  // namespace ember::kernels::portable
