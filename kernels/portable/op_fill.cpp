// Fills:
//   aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None,
//                       Tensor(a!) out)        args: self, fill_value, memory_format, out, ret
//   aten::fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out)
//                                              args: self, value, out, ret
//   aten::scalar_tensor.out(Scalar s, *, Tensor(a!) out)
//                                              args: s, out, ret
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
#include "runtime/kernel/kernel_registry.h"

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

void full_like_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  const EValue* value = scalar_arg(ctx, args, 1, "fill_value");
  if (value == nullptr) return;
  EMBER_KERNEL_CHECK(ctx, args[2] != nullptr && (args[2]->is_none() || args[2]->is_int()),
                     "argument 'memory_format' (index 2) must be None or an int, got %s",
                     args[2] ? tag_name(args[2]->tag) : "null");
  Tensor* out = tensor_arg(ctx, args, 3, "out");
  if (out == nullptr) return;
  fill_with(ctx, self->shape(), *value, "fill_value", *out);
}

void fill_scalar_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  const EValue* value = scalar_arg(ctx, args, 1, "value");
  if (value == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 2, "out");
  if (out == nullptr) return;
  fill_with(ctx, self->shape(), *value, "value", *out);
}

void scalar_tensor_out(KernelContext& ctx, EValue** args) {
  const EValue* value = scalar_arg(ctx, args, 0, "s");
  if (value == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 1, "out");
  if (out == nullptr) return;
  fill_with(ctx, {}, *value, "s", *out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::full_like.out", full_like_out, 5);
EMBER_REGISTER_KERNEL("aten::fill.Scalar_out", fill_scalar_out, 4);
EMBER_REGISTER_KERNEL("aten::scalar_tensor.out", scalar_tensor_out, 3);

}  // namespace ember::kernels::portable
