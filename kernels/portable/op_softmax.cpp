// aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)
// aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)
//
// Floating dtypes; out has self's dtype, or float32 for a float16/bfloat16
// self with half_to_float. Numerically stable: the row maximum is subtracted
// before exp (and log-softmax is x - max - log(sum exp(x - max))). float32 and
// the 16-bit floats compute in float (exp: the vectorisable polynomial of
// fast_math.h, within 1 ulp), float64 in double. Any dim orders. float32
// self and out with one layout run through softmax_f32 (contiguous passes
// over rows or blocks of columns, AVX2 where the CPU has it).
#include <cmath>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/fast_math.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/portable/util/softmax_f32.h"
#include "kernels/portable/util/unary.h"  // unary_detail::same_layout
#include "kernels/generated/functions/portable/op_softmax.h"

namespace ember::kernels::portable {
namespace {

// exp in the compute type: the vectorisable polynomial for float.
template <typename CT>
inline CT exp_ct(CT v) {
  if constexpr (std::is_same_v<CT, float>) {
    return fast_expf(v);
  } else {
    return std::exp(v);
  }
}

template <bool kLog, typename S, typename O>
void softmax_rows(const Tensor& self, const ScanPlan& scan, Tensor& out) {
  const ReducePlan& plan = scan.plan;
  const int64_t len = scan.len, in_step = scan.in_step, out_step = scan.out_step;
  using CT = compute_t<S>;
  const S* in = self.data_ptr<const S>();
  O* o = out.data_ptr<O>();
  if constexpr (std::is_same_v<S, float> && std::is_same_v<O, float>) {
    if (in_step == 1 && out_step == 1) {
      plan.for_each_output([&](int64_t out_off, int64_t in_off) {
        softmax_f32(kLog, in + in_off, o + out_off, 1, len, 1);
      });
      return;
    }
  }
  plan.for_each_output([&](int64_t out_off, int64_t in_off) {
    const S* p = in + in_off;
    O* q = o + out_off;
    CT mx = -std::numeric_limits<CT>::infinity();
    for (int64_t i = 0; i < len; ++i) mx = nan_max(mx, convert<CT>(p[i * in_step]));
    // An all -inf row would give inf - inf; eager returns NaN there too.
    CT sum = 0;
    if constexpr (kLog) {
      for (int64_t i = 0; i < len; ++i) sum += exp_ct(convert<CT>(p[i * in_step]) - mx);
      // (x - max) - log(sum), not x - (max + log(sum)): the latter rounds at
      // the scale of max.
      const CT log_sum = std::log(sum);
      for (int64_t i = 0; i < len; ++i) {
        q[i * out_step] = convert<O>((convert<CT>(p[i * in_step]) - mx) - log_sum);
      }
    } else {
      // Store exp once in out, then scale (out is at least as wide as self).
      for (int64_t i = 0; i < len; ++i) {
        const CT e = exp_ct(convert<CT>(p[i * in_step]) - mx);
        sum += e;
        q[i * out_step] = convert<O>(e);
      }
      const CT inv = CT(1) / sum;
      if constexpr (std::is_floating_point_v<O>) {
        for (int64_t i = 0; i < len; ++i) q[i * out_step] *= inv;
      } else {
        // 16-bit outputs: recompute so the result is rounded once.
        for (int64_t i = 0; i < len; ++i) {
          q[i * out_step] = convert<O>(exp_ct(convert<CT>(p[i * in_step]) - mx) * inv);
        }
      }
    }
  });
}

template <bool kLog>
void run_softmax(KernelContext& ctx, const Tensor& self, int64_t dim_arg, bool half_to_float,
                 Tensor& out) {
  int32_t dim = 0;
  if (!normalize_dim(ctx, dim_arg, self.dim, "dim", &dim)) return;
  if (!is_floating_type(self.dtype)) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  const bool is_16 = self.dtype == ScalarType::Half || self.dtype == ScalarType::BFloat16;
  EMBER_KERNEL_CHECK(ctx, !half_to_float || is_16,
                     "half_to_float: needs a float16 or bfloat16 self, got %s",
                     scalar_type_name(self.dtype));
  if (!check_dtype(ctx, out, "out", half_to_float ? ScalarType::Float : self.dtype)) return;
  if (!resize_out(ctx, out, self.shape())) return;
  if (out.numel == 0) return;
  if (self.dtype == ScalarType::Float && self.dim > 0 &&
      unary_detail::same_layout(self, out)) {
    // Dense tensors: the dims after `dim` in the dim order span strides[dim]
    // elements, so the data is [outer, len, inner] blocks.
    const int64_t n = self.sizes[dim];
    const int64_t inner = self.strides[dim];
    const float* x = self.data_ptr<const float>();
    float* y = out.data_ptr<float>();
    // Independent [n, inner] blocks: split the outer dim over the pool.
    parallel_range(ctx, self.numel / (n * inner), kParallelMinElements / (n * inner) + 1, 1,
                   [&](int64_t begin, int64_t end) {
                     softmax_f32(kLog, x + begin * n * inner, y + begin * n * inner, end - begin,
                                 n, inner);
                   });
    return;
  }
  ScanPlan scan;
  scan_plan(self, dim, out, &scan);
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (half_to_float) {
      if constexpr (kIsFloatStorage<S> && !std::is_floating_point_v<S>) {
        softmax_rows<kLog, S, float>(self, scan, out);
      }
    } else {
      softmax_rows<kLog, S, S>(self, scan, out);
    }
  });
}

}  // namespace

void _softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float,
                  Tensor& out) {
  run_softmax<false>(ctx, self, dim, half_to_float, out);
}

void _log_softmax_out(KernelContext& ctx, const Tensor& self, int64_t dim, bool half_to_float,
                      Tensor& out) {
  run_softmax<true>(ctx, self, dim, half_to_float, out);
}

}  // namespace ember::kernels::portable
