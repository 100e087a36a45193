// Reductions over a set of dims, shared by sum/mean/prod/amax/var/argmax,
// softmax and the norms.
//
// A reduction splits the input's dims into kept dims (one output element
// each) and reduced dims. `ReducePlan` coalesces each group separately: the
// kept dims become a `StridedLoop<2>` over (out, in), the reduced dims a list
// of (size, stride) rows in logical row-major order. A reduction of a
// contiguous block is then one unit-stride row per output, and a reduction of
// an outer dim with contiguous inner dims (outer × reduce × inner) runs as
// `reduce_blocked`, accumulating a block of outputs per input row.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/dtype.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_args.h"

namespace ember::kernels::portable {

/// Which dims of a rank-`rank` tensor a reduction folds.
struct ReduceDims {
  bool reduced[kTensorMaxDim] = {};
  int32_t rank = 0;
};

/// Reads a reduction's dim list (`int[1] dim` or `int[1]? dim`): None or an
/// empty list reduces every dim. Negative dims wrap; a repeated dim fails. A
/// 0-dim tensor accepts dims 0 and -1. False after failing.
bool reduce_dims_list(KernelContext& ctx, std::optional<IntSpan> dim, const char* name,
                      int32_t rank, ReduceDims* out);

/// Marks every dim reduced.
void reduce_dims_all(int32_t rank, ReduceDims* out);

/// Marks the single dim `dim` (possibly negative) reduced. False after failing.
bool reduce_dims_one(KernelContext& ctx, int64_t dim, int32_t rank, const char* name,
                     ReduceDims* out);

/// Result sizes: reduced dims become 1 (keepdim) or vanish. Returns the rank.
int32_t reduced_sizes(const Tensor& in, const ReduceDims& dims, bool keepdim, int32_t* sizes);

/// Resizes `out` to the reduced sizes; false after failing.
bool resize_reduced(KernelContext& ctx, const Tensor& in, const ReduceDims& dims, bool keepdim,
                    Tensor& out);

/// Fails (as eager does for reductions without an identity: amax, argmax,
/// max.dim, ...) when a reduced dim has size 0 or every dim is reduced over
/// an empty tensor.
bool check_nonempty_reduction(KernelContext& ctx, const Tensor& in, const ReduceDims& dims,
                              const char* what);

/// Reads a `ScalarType? dtype` argument: `*has` false for None, else `*dtype`
/// set. False after failing on a dtype Ember does not support.
bool optional_dtype(KernelContext& ctx, std::optional<int64_t> value, const char* name,
                    ScalarType* dtype, bool* has);

struct ReducePlan {
  StridedLoop<2> kept;  // Operand 0: out, operand 1: in.
  int32_t red_dim = 0;
  int64_t red_sizes[kTensorMaxDim];
  int64_t red_strides[kTensorMaxDim];
  int64_t reduce_numel = 1;

  /// `out` has the reduced sizes (with or without keepdim).
  void init(const Tensor& in, const ReduceDims& dims, const Tensor& out);

  /// Calls f(out_offset, in_offset) for every output element. The kept
  /// loop hands rows; see `for_each_output_row` for the row form.
  template <typename F>
  void for_each_output(F&& f) const {
    kept.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i) f(off[0] + i * st[0], off[1] + i * st[1]);
    });
  }

  /// Calls f(out_offset, in_offset, n, out_stride, in_stride) per row of outputs.
  template <typename F>
  void for_each_output_row(F&& f) const {
    kept.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      f(off[0], off[1], n, st[0], st[1]);
    });
  }

  /// Calls f(offset, n, stride) for each row of reduced elements of the
  /// output whose first input element is at `in_offset`, in logical order.
  template <typename F>
  void for_each_reduced_row(int64_t in_offset, F&& f) const {
    if (reduce_numel == 0) return;
    if (red_dim == 0) {
      f(in_offset, int64_t{1}, int64_t{0});
      return;
    }
    const int64_t n = red_sizes[red_dim - 1];
    const int64_t s = red_strides[red_dim - 1];
    if (red_dim == 1) {
      f(in_offset, n, s);
      return;
    }
    int64_t counter[kTensorMaxDim] = {};
    int64_t off = in_offset;
    while (true) {
      f(off, n, s);
      int32_t d = red_dim - 2;
      for (; d >= 0; --d) {
        ++counter[d];
        off += red_strides[d];
        if (counter[d] < red_sizes[d]) break;
        off -= red_strides[d] * red_sizes[d];
        counter[d] = 0;
      }
      if (d < 0) return;
    }
  }

  /// True when outputs along a kept row read unit-stride input and the
  /// reduction is one strided run: the outer × reduce × inner case.
  bool blocked_inner(int64_t row_in_stride, int64_t row_n) const {
    return row_in_stride == 1 && row_n > 1 && red_dim == 1;
  }
};

/// The walk of an op along one dim (cumsum, cummax, logcumsumexp, softmax):
/// every position of the other dims, with the dim's length and its strides in
/// self and out (a 0-d tensor is one element).
struct ScanPlan {
  ReducePlan plan;
  int64_t len = 1, in_step = 0, out_step = 0;
};

/// `dim` already normalised (see normalize_dim); out has self's shape.
void scan_plan(const Tensor& self, int32_t dim, const Tensor& out, ScanPlan* scan);

/// Accumulates a row of n values of type S into Acc with several independent
/// accumulators (so a unit-stride row vectorises without reassociating one
/// chain). step(Acc, Acc value) -> Acc; merge(Acc, Acc) -> Acc.
template <typename Acc, typename S, typename Step, typename Merge>
inline Acc reduce_row(const S* p, int64_t n, int64_t stride, Acc identity, Step step,
                      Merge merge) {
  if (stride == 1 && n >= 16) {
    constexpr int kLanes = 8;
    Acc lanes[kLanes];
    for (int k = 0; k < kLanes; ++k) lanes[k] = identity;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int k = 0; k < kLanes; ++k) lanes[k] = step(lanes[k], convert<Acc>(p[i + k]));
    }
    Acc acc = identity;
    for (; i < n; ++i) acc = step(acc, convert<Acc>(p[i]));
    // Pairwise merge keeps the float error growth logarithmic in the lanes.
    for (int w = kLanes / 2; w > 0; w /= 2) {
      for (int k = 0; k < w; ++k) lanes[k] = merge(lanes[k], lanes[k + w]);
    }
    return merge(lanes[0], acc);
  }
  Acc acc = identity;
  for (int64_t i = 0; i < n; ++i) acc = step(acc, convert<Acc>(p[i * stride]));
  return acc;
}

/// Runs a plain fold over `plan`: every output element gets
/// finish(out_offset, fold of step over its reduced elements). Input values
/// are read as S (in's storage type) and converted to Acc.
template <typename S, typename Acc, typename Step, typename Merge, typename Finish>
void reduce_fold(const Tensor& in, const ReducePlan& plan, Acc identity, Step step, Merge merge,
                 Finish finish) {
  const S* base = in.data_ptr<const S>();
  plan.for_each_output_row([&](int64_t out_off, int64_t in_off, int64_t n, int64_t out_st,
                               int64_t in_st) {
    if (plan.blocked_inner(in_st, n) && plan.reduce_numel > 0) {
      // Outer × reduce × inner: sweep the reduced dim once per block of
      // outputs, reading unit-stride input rows.
      constexpr int64_t kBlock = 64;
      const int64_t rn = plan.red_sizes[0];
      const int64_t rs = plan.red_strides[0];
      Acc acc[kBlock];
      for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
        const int64_t b = n - j0 < kBlock ? n - j0 : kBlock;
        for (int64_t j = 0; j < b; ++j) acc[j] = identity;
        const S* p = base + in_off + j0;
        for (int64_t r = 0; r < rn; ++r) {
          const S* row = p + r * rs;
          for (int64_t j = 0; j < b; ++j) acc[j] = step(acc[j], convert<Acc>(row[j]));
        }
        for (int64_t j = 0; j < b; ++j) finish(out_off + (j0 + j) * out_st, acc[j]);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      Acc acc = identity;
      plan.for_each_reduced_row(in_off + i * in_st, [&](int64_t off, int64_t m, int64_t s) {
        acc = merge(acc, reduce_row<Acc>(base + off, m, s, identity, step, merge));
      });
      finish(out_off + i * out_st, acc);
    }
  });
}

/// max/min steps that propagate NaN as eager does.
template <typename T>
inline T nan_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(b)) return b;
    if (std::isnan(a)) return a;
  }
  return b > a ? b : a;
}
template <typename T>
inline T nan_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(b)) return b;
    if (std::isnan(a)) return a;
  }
  return b < a ? b : a;
}

template <typename T>
inline bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

}  // namespace ember::kernels::portable
