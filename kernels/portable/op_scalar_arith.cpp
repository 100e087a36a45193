// Arithmetic with a Scalar operand, and division with a rounding mode:
//   aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
//   aten::sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
//       args: self, other, alpha, out, out(return)
//   aten::mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//   aten::div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//       args: self, other, out, out(return)
//   aten::div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out)
//   aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out)
//       args: self, other, rounding_mode, out, out(return)
// Type promotion treats the Scalar as a wrapped number (an int tensor plus
// 2.5 is float32; uint8 plus 300 stays uint8 and wraps). add/sub/mul take
// every dtype but sub rejects a bool self or other; a floating alpha needs a floating result.
// div without a rounding mode is true division (integers → float32);
// "trunc"/"floor" keep the promoted dtype, reject bool, and fail on an
// integer division by zero.
#include <string_view>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/binary_driver.h"
#include "kernels/portable/util/division.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::portable {
namespace {

enum class Rounding { kNone, kTrunc, kFloor };

/// Reads `str? rounding_mode`; false after failing.
bool rounding_arg(KernelContext& ctx, EValue** args, int i, Rounding* mode) {
  const EValue* v = args[i];
  if (v != nullptr && v->is_none()) {
    *mode = Rounding::kNone;
    return true;
  }
  if (v == nullptr || v->tag != Tag::String) {
    ctx.fail(Error::InvalidArgument,
             "argument 'rounding_mode' (index %d) must be a string or None, got %s", i,
             v ? tag_name(v->tag) : "null");
    return false;
  }
  if (v->as_string == "trunc") {
    *mode = Rounding::kTrunc;
  } else if (v->as_string == "floor") {
    *mode = Rounding::kFloor;
  } else {
    ctx.fail(Error::InvalidArgument, "rounding_mode: must be None, 'trunc' or 'floor', got '%.*s'",
             static_cast<int>(v->as_string.size()), v->as_string.data());
    return false;
  }
  return true;
}

template <bool kSub>
void add_sub_scalar_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  const EValue* other = scalar_arg(ctx, args, 1, "other");
  if (other == nullptr) return;
  const EValue* alpha = scalar_arg(ctx, args, 2, "alpha");
  if (alpha == nullptr) return;
  Tensor* out = tensor_arg(ctx, args, 3, "out");
  if (out == nullptr) return;
  const ScalarType common = prepare_tensor_scalar(ctx, *self, "self", *other, *out, false);
  if (common == kUndefinedDtype) return;
  EMBER_KERNEL_CHECK(ctx, !(kSub && (common == ScalarType::Bool || other->is_bool())),
                     "self: subtraction with bool operands is not supported (use logical_xor)");
  EMBER_KERNEL_CHECK(ctx, !(alpha->is_double() && !is_floating_type(common)),
                     "alpha: a floating alpha needs floating inputs, got %s",
                     scalar_type_name(common));
  (void)dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const CT b = wrap_mul(scalar_as<CT>(*alpha), convert<CT>(convert<S>(scalar_as<CT>(*other))));
    if constexpr (kSub) {
      apply_unary<S>(*self, *out, [b](CT x) { return wrap_sub(x, b); });
    } else {
      apply_unary<S>(*self, *out, [b](CT x) { return wrap_add(x, b); });
    }
  });
}

void mul_scalar_out(KernelContext& ctx, EValue** args) {
  binary_scalar_out<kAllTypes>(ctx, args, [](auto x, auto y) { return wrap_mul(x, y); });
}

/// Shared by the scalar and tensor forms: divides with `mode` in dtype
/// `common` via `run(op)`, which applies a binary op over the operands.
template <typename Run>
void divide(KernelContext& ctx, ScalarType common, Rounding mode, Run run) {
  bool zero = false;
  bool ok = true;
  if (mode == Rounding::kNone) {
    ok = dispatch_dtype<kFloating>(common, [&](auto tag) {
      using CT = compute_t<typename decltype(tag)::type>;
      run(tag, [](CT x, CT y) { return x / y; });
    });
  } else if (mode == Rounding::kTrunc) {
    ok = dispatch_dtype<kRealTypes>(common, [&](auto tag) {
      using CT = compute_t<typename decltype(tag)::type>;
      run(tag, [&zero](CT x, CT y) { return div_trunc(x, y, zero); });
    });
  } else {
    ok = dispatch_dtype<kRealTypes>(common, [&](auto tag) {
      using CT = compute_t<typename decltype(tag)::type>;
      run(tag, [&zero](CT x, CT y) { return div_floor(x, y, zero); });
    });
  }
  if (!ok) {
    ctx.fail(Error::InvalidArgument, "self: unsupported dtype %s for rounding_mode '%s'",
             scalar_type_name(common), mode == Rounding::kTrunc ? "trunc" : "floor");
  } else if (zero) {
    ctx.fail(Error::InvalidArgument, "other: integer division by zero (dtype %s)",
             scalar_type_name(common));
  }
}

void div_scalar_impl(KernelContext& ctx, Tensor& self, const EValue& other, Rounding mode,
                     Tensor& out) {
  const ScalarType common =
      prepare_tensor_scalar(ctx, self, "self", other, out, mode == Rounding::kNone);
  if (common == kUndefinedDtype) return;
  divide(ctx, common, mode, [&](auto tag, auto op) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const CT b = convert<CT>(convert<S>(scalar_as<CT>(other)));
    apply_unary<S>(self, out, [b, op](CT x) { return op(x, b); });
  });
}

void div_scalar_out(KernelContext& ctx, EValue** args) {
  Tensor *self = nullptr, *out = nullptr;
  const EValue* other = nullptr;
  if (!tensor_scalar_args(ctx, args, "other", &self, &other, &out)) return;
  div_scalar_impl(ctx, *self, *other, Rounding::kNone, *out);
}

void div_scalar_mode_out(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  const EValue* other = scalar_arg(ctx, args, 1, "other");
  if (other == nullptr) return;
  Rounding mode;
  if (!rounding_arg(ctx, args, 2, &mode)) return;
  Tensor* out = tensor_arg(ctx, args, 3, "out");
  if (out == nullptr) return;
  div_scalar_impl(ctx, *self, *other, mode, *out);
}

void div_out_mode(KernelContext& ctx, EValue** args) {
  Tensor* self = tensor_arg(ctx, args, 0, "self");
  if (self == nullptr) return;
  Tensor* other = tensor_arg(ctx, args, 1, "other");
  if (other == nullptr) return;
  Rounding mode;
  if (!rounding_arg(ctx, args, 2, &mode)) return;
  Tensor* out = tensor_arg(ctx, args, 3, "out");
  if (out == nullptr) return;
  ScalarType common = result_type(*self, *other);
  if (mode == Rounding::kNone && !is_floating_type(common)) common = ScalarType::Float;
  if (!prepare_binary(ctx, *self, *other, *out, common)) return;
  divide(ctx, common, mode, [&](auto tag, auto op) {
    using S = typename decltype(tag)::type;
    apply_binary<S>(*self, *other, *out, op);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::add.Scalar_out", add_sub_scalar_out<false>, 5);
EMBER_REGISTER_KERNEL("aten::sub.Scalar_out", add_sub_scalar_out<true>, 5);
EMBER_REGISTER_KERNEL("aten::mul.Scalar_out", mul_scalar_out, 4);
EMBER_REGISTER_KERNEL("aten::div.Scalar_out", div_scalar_out, 4);
EMBER_REGISTER_KERNEL("aten::div.Scalar_mode_out", div_scalar_mode_out, 5);
EMBER_REGISTER_KERNEL("aten::div.out_mode", div_out_mode, 5);

}  // namespace ember::kernels::portable
