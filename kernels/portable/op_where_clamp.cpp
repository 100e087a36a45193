// Three-operand selects:
//   aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out)
//   aten::clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out)
// All three operands broadcast together. where: condition bool (uint8 also,
// as eager still accepts it), self/other promoted, every dtype. clamp:
// min(max(self, min), max) in the promoted dtype of the given tensors, every
// dtype (bool only with a single bound, as eager); NaN in any operand propagates, and when
// min > max the result is max.
#include <cmath>
#include <type_traits>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/elementwise_mixed.h"
#include "kernels/generated/functions/portable/op_where_clamp.h"

namespace ember::kernels::portable {
namespace {

/// Broadcasts the shapes of `ts` (3 tensors) and resizes out; false after failing.
bool broadcast_three(KernelContext& ctx, const Tensor* const* ts, const char* const* names,
                     Tensor& out) {
  int32_t shape[kTensorMaxDim];
  int32_t dim = 0;
  int32_t tmp[kTensorMaxDim];
  int32_t tmp_dim = 0;
  if (!broadcast_shapes(ts[0]->shape(), ts[1]->shape(), tmp, &tmp_dim) ||
      !broadcast_shapes({tmp, static_cast<size_t>(tmp_dim)}, ts[2]->shape(), shape, &dim)) {
    ctx.fail(Error::InvalidArgument,
             "%s of shape %s, %s of shape %s and %s of shape %s do not broadcast", names[0],
             ShapeStr(ts[0]->shape()).c_str(), names[1], ShapeStr(ts[1]->shape()).c_str(),
             names[2], ShapeStr(ts[2]->shape()).c_str());
    return false;
  }
  return resize_out(ctx, out, {shape, static_cast<size_t>(dim)});
}

template <typename T>
inline bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

}  // namespace

void where_self_out(KernelContext& ctx, const Tensor& condition, const Tensor& self,
                    const Tensor& other, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx,
                     condition.dtype == ScalarType::Bool || condition.dtype == ScalarType::Byte,
                     "condition: expected dtype bool, got %s", scalar_type_name(condition.dtype));
  if (!check_supported(ctx, self, "self") || !check_supported(ctx, other, "other") ||
      !check_supported(ctx, out, "out")) {
    return;
  }
  const Tensor* ts[3] = {&condition, &self, &other};
  const char* names[3] = {"condition", "self", "other"};
  if (!broadcast_three(ctx, ts, names, out)) return;
  const ScalarType common = result_type(self, other);
  if (!check_can_cast(ctx, common, out)) return;
  (void)dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    // Read the condition as bool whatever its storage (uint8 → != 0).
    apply_ternary<BoolByte, S>(condition, self, other, out,
                               [](bool c, CT x, CT y) { return c ? x : y; });
  });
}

void clamp_Tensor_out(KernelContext& ctx, const Tensor& self, const Tensor* min,
                      const Tensor* max, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, min != nullptr || max != nullptr,
                     "at least one of min and max must be given");
  if (!check_supported(ctx, self, "self") || (min && !check_supported(ctx, *min, "min")) ||
      (max && !check_supported(ctx, *max, "max")) || !check_supported(ctx, out, "out")) {
    return;
  }
  ResultTypeState rt;
  rt.add_tensor(self);
  if (min != nullptr) rt.add_tensor(*min);
  if (max != nullptr) rt.add_tensor(*max);
  const ScalarType common = rt.result();
  EMBER_KERNEL_CHECK(ctx, !(common == ScalarType::Bool && min != nullptr && max != nullptr),
                     "self: unsupported dtype bool with both min and max (as eager)");
  // A missing bound is replaced by self, and its side of the clamp skipped.
  const bool has_lo = min != nullptr;
  const bool has_hi = max != nullptr;
  const Tensor* ts[3] = {&self, has_lo ? min : &self, has_hi ? max : &self};
  const char* names[3] = {"self", "min", "max"};
  if (!broadcast_three(ctx, ts, names, out) || !check_can_cast(ctx, common, out)) return;
  (void)dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    apply_ternary<S, S>(*ts[0], *ts[1], *ts[2], out, [=](CT x, CT l, CT h) {
      if (has_lo) x = (is_nan_value(x) || x > l) ? x : l;  // max(x, l), NaN-propagating
      if (has_hi) x = (is_nan_value(x) || x < h) ? x : h;
      return x;
    });
  });
}

}  // namespace ember::kernels::portable
