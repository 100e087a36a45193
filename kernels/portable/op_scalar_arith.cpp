// Arithmetic with a Scalar operand, and division with a rounding mode:
//   aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
//   aten::sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
//   aten::mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//   aten::div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//   aten::div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out)
//   aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out)
// Type promotion treats the Scalar as a wrapped number (an int tensor plus
// 2.5 is float32; uint8 plus 300 stays uint8 and wraps). add/sub/mul take
// every dtype but sub rejects a bool self or other; a floating alpha needs a floating result.
// div without a rounding mode is true division (integers → float32);
// "trunc"/"floor" keep the promoted dtype, reject bool, and fail on an
// integer division by zero.
#include <optional>
#include <string_view>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/binary_driver.h"
#include "kernels/portable/util/division.h"
#include "kernels/generated/functions/portable/op_scalar_arith.h"

namespace ember::kernels::portable {
namespace {

enum class Rounding { kNone, kTrunc, kFloor };

/// Parses `str? rounding_mode`; false after failing.
bool parse_rounding(KernelContext& ctx, std::optional<std::string_view> rounding_mode,
                    Rounding* mode) {
  if (!rounding_mode.has_value()) {
    *mode = Rounding::kNone;
  } else if (*rounding_mode == "trunc") {
    *mode = Rounding::kTrunc;
  } else if (*rounding_mode == "floor") {
    *mode = Rounding::kFloor;
  } else {
    ctx.fail(Error::InvalidArgument, "rounding_mode: must be None, 'trunc' or 'floor', got '%.*s'",
             static_cast<int>(rounding_mode->size()), rounding_mode->data());
    return false;
  }
  return true;
}

template <bool kSub>
void add_sub_scalar(KernelContext& ctx, const Tensor& self, const EValue& other,
                    const EValue& alpha, Tensor& out) {
  const ScalarType common = prepare_tensor_scalar(ctx, self, "self", other, out, false);
  if (common == kUndefinedDtype) return;
  EMBER_KERNEL_CHECK(ctx, !(kSub && (common == ScalarType::Bool || other.is_bool())),
                     "self: subtraction with bool operands is not supported (use logical_xor)");
  EMBER_KERNEL_CHECK(ctx, !(alpha.is_double() && !is_floating_type(common)),
                     "alpha: a floating alpha needs floating inputs, got %s",
                     scalar_type_name(common));
  (void)dispatch_dtype<kAllTypes>(common, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const CT b = wrap_mul(scalar_as<CT>(alpha), convert<CT>(convert<S>(scalar_as<CT>(other))));
    if constexpr (kSub) {
      apply_unary<S>(self, out, [b](CT x) { return wrap_sub(x, b); });
    } else {
      apply_unary<S>(self, out, [b](CT x) { return wrap_add(x, b); });
    }
  });
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

void div_scalar(KernelContext& ctx, const Tensor& self, const EValue& other, Rounding mode,
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

}  // namespace

void add_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other,
                    const EValue& alpha, Tensor& out) {
  add_sub_scalar<false>(ctx, self, other, alpha, out);
}

void sub_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other,
                    const EValue& alpha, Tensor& out) {
  add_sub_scalar<true>(ctx, self, other, alpha, out);
}

void mul_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other, Tensor& out) {
  binary_scalar_out<kAllTypes>(ctx, self, other, out,
                               [](auto x, auto y) { return wrap_mul(x, y); });
}

void div_Scalar_out(KernelContext& ctx, const Tensor& self, const EValue& other, Tensor& out) {
  div_scalar(ctx, self, other, Rounding::kNone, out);
}

void div_Scalar_mode_out(KernelContext& ctx, const Tensor& self, const EValue& other,
                         std::optional<std::string_view> rounding_mode, Tensor& out) {
  Rounding mode;
  if (!parse_rounding(ctx, rounding_mode, &mode)) return;
  div_scalar(ctx, self, other, mode, out);
}

void div_out_mode(KernelContext& ctx, const Tensor& self, const Tensor& other,
                  std::optional<std::string_view> rounding_mode, Tensor& out) {
  Rounding mode;
  if (!parse_rounding(ctx, rounding_mode, &mode)) return;
  ScalarType common = result_type(self, other);
  if (mode == Rounding::kNone && !is_floating_type(common)) common = ScalarType::Float;
  if (!prepare_binary(ctx, self, other, out, common)) return;
  divide(ctx, common, mode, [&](auto tag, auto op) {
    using S = typename decltype(tag)::type;
    apply_binary<S>(self, other, out, op);
  });
}

}  // namespace ember::kernels::portable
