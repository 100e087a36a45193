// Shared driver for unary elementwise kernels of the form
//   aten::<op>.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
#pragma once

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/elementwise.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/unary_f32.h"

namespace ember::kernels::portable {

namespace unary_detail {

// Checks self and out, resizes out and picks the compute dtype; false (with
// the failure set) when the kernel must stop.
inline bool prepare(KernelContext& ctx, const Tensor& self, Tensor& out, bool to_float,
                    ScalarType* common) {
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, out, "out")) return false;
  if (!resize_out(ctx, out, self.shape())) return false;
  *common = self.dtype;
  if (to_float && !is_floating_type(*common)) *common = ScalarType::Float;
  return check_can_cast(ctx, *common, out);
}

// True when a and b (same sizes) put every element at the same offset, so
// one flat loop over numel covers both (strides come from the dim order, so
// every tensor is dense).
inline bool same_layout(const Tensor& a, const Tensor& b) {
  for (int32_t d = 0; d < a.dim; ++d) {
    if (a.sizes[d] > 1 && a.strides[d] != b.strides[d]) return false;
  }
  return true;
}

}  // namespace unary_detail

/// Runs out = op(self). With `kToFloat`, integral and bool inputs compute in
/// float32 (PyTorch's int → float promotion for sin, tanh, ...); otherwise the
/// computation keeps self's dtype, which must be in kSet.
template <uint32_t kSet, bool kToFloat, typename Op>
void run_unary_op(KernelContext& ctx, const Tensor& self, Tensor& out, Op op) {
  ScalarType common = ScalarType::Float;
  if (!unary_detail::prepare(ctx, self, out, kToFloat, &common)) return;
  const bool ok = dispatch_dtype<kSet>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_unary<S>(self, out, [&](compute_t<S> x) { return static_cast<compute_t<S>>(op(x)); },
                   &ctx);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

/// As run_unary_op, but a float32 self and out with the same layout run as
/// one unary_f32(fast, ...) call (the AVX2 build where the CPU has it). `op`
/// must compute the same function (for float, the fast_math.h one) for
/// every other case: other dtypes, mixed dtypes, different layouts.
template <uint32_t kSet, bool kToFloat, typename Op>
void run_unary_op(KernelContext& ctx, const Tensor& self, Tensor& out, UnaryF32 fast, Op op) {
  ScalarType common = ScalarType::Float;
  if (!unary_detail::prepare(ctx, self, out, kToFloat, &common)) return;
  if (self.dtype == ScalarType::Float && out.dtype == ScalarType::Float &&
      unary_detail::same_layout(self, out)) {
    const float* x = self.data_ptr<const float>();
    float* y = out.data_ptr<float>();
    // Slices in whole 64-element runs: each element goes through the same
    // vector or tail code as on one thread.
    parallel_range(ctx, out.numel, kParallelMinElements, 64, [&](int64_t begin, int64_t end) {
      unary_f32(fast, x + begin, y + begin, end - begin);
    });
    return;
  }
  const bool ok = dispatch_dtype<kSet>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    apply_unary<S>(self, out, [&](compute_t<S> x) { return static_cast<compute_t<S>>(op(x)); },
                   &ctx);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

}  // namespace ember::kernels::portable
