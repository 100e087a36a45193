// Fills:
//   aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None,
//                       Tensor(a!) out) -> Tensor(a!)
//   aten::fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out) -> Tensor(a!)
//   aten::scalar_tensor.out(Scalar s, *, Tensor(a!) out) -> Tensor(a!)
// out takes self's shape (a 0-dim shape for scalar_tensor) and is filled with
// the value cast to out's dtype (floats truncate toward zero into integers;
// any non-zero value is true). A value out of the dtype's range fails, as
// eager's checked conversion does: integers (uint8 also takes [-255, -1],
// wrapping), NaN/inf into an integer, finite values beyond float16/bfloat16.
// Every dtype; memory_format only affects strides, which out already has.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_fill.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
bool value_fits(const EValue& v) {
  if constexpr (kIsBoolStorage<S>) {
    return true;
  } else if constexpr (std::is_integral_v<S>) {
    using L = std::numeric_limits<S>;
    // uint8 accepts negatives down to -255 (they wrap), like c10's checked_convert.
    const long double lo =
        std::is_unsigned_v<S> ? -static_cast<long double>(L::max()) : L::min();
    const long double hi = L::max();
    if (v.is_double()) {
      return std::isfinite(v.as_double) && v.as_double >= lo && v.as_double <= hi;
    }
    const long double i = static_cast<long double>(v.scalar_as_int());
    return i >= lo && i <= hi;
  } else {
    const double d = v.scalar_as_double();
    if (!std::isfinite(d)) return true;
    if constexpr (std::is_same_v<S, Half>) return std::fabs(d) <= 65504.0;
    else if constexpr (std::is_same_v<S, BFloat16> || std::is_same_v<S, float>)
      return std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max());
    else return true;
  }
}

template <typename S>
S value_as(const EValue& v) {
  if constexpr (kIsBoolStorage<S>) {
    return BoolByte(v.scalar_as_double() != 0.0);
  } else if constexpr (std::is_integral_v<S>) {
    // Integers exactly (no trip through double); doubles truncate.
    return static_cast<S>(v.is_double() ? static_cast<int64_t>(v.as_double) : v.scalar_as_int());
  } else {
    return convert<S>(static_cast<compute_t<S>>(v.scalar_as_double()));
  }
}

/// Resizes out to `shape` and fills it with `value`.
void fill_with(KernelContext& ctx, std::span<const int32_t> shape, const EValue& value,
               const char* value_name, Tensor& out) {
  if (!check_supported(ctx, out, "out")) return;
  if (!resize_out(ctx, out, shape)) return;
  (void)dispatch_dtype<kAllTypes>(out.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (!value_fits<S>(value)) {
      if (value.is_double()) {
        ctx.fail(Error::InvalidArgument, "%s: %g cannot be converted to dtype %s without overflow",
                 value_name, value.as_double, scalar_type_name(out.dtype));
      } else {
        ctx.fail(Error::InvalidArgument,
                 "%s: %lld cannot be converted to dtype %s without overflow",
                 value_name, static_cast<long long>(value.scalar_as_int()),
                 scalar_type_name(out.dtype));
      }
      return;
    }
    const S v = value_as<S>(value);
    S* d = out.data_ptr<S>();
    // Every dim order covers the same numel contiguous elements.
    for (int64_t i = 0; i < out.numel; ++i) d[i] = v;
  });
}

}  // namespace

void full_like_out(KernelContext& ctx, const Tensor& self, const EValue& fill_value,
                   std::optional<int64_t> memory_format, Tensor& out) {
  (void)memory_format;  // Out's strides already are the format.
  fill_with(ctx, self.shape(), fill_value, "fill_value", out);
}

void fill_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& value, Tensor& out) {
  fill_with(ctx, self.shape(), value, "value", out);
}

void scalar_tensor_out(KernelContext& ctx, const EValue& s, Tensor& out) {
  fill_with(ctx, {}, s, "s", out);
}

}  // namespace ember::kernels::portable
