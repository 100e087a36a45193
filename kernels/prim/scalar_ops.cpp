// Symbolic-scalar ops (executorch_prim::*.Scalar): arithmetic on SymInt /
// SymFloat / SymBool values computed at run time, with Python semantics.
//
//   executorch_prim::add.Scalar(Scalar a, Scalar b) -> Scalar, and the same for
//       sub, mul, floordiv, mod, sym_max, sym_min: Int when both operands are
//       Int/Bool, Double otherwise; truediv: Double;
//       eq, gt, ge, lt, le: Bool.
//   executorch_prim::neg.Scalar(Scalar a) -> Scalar: Int or Double like a
//       (Bool negates as Int); ceil, round, trunc: Int (round is half-to-even,
//       like Python); sym_float: Double; sym_int: Int, truncating;
//       sym_not: Bool.
//   executorch_prim::sym_ite.Scalar(Scalar condition, Scalar if_true,
//       Scalar if_false) -> Scalar: a copy of if_true or if_false.
// Every op overwrites its result value (tag and payload). floordiv and mod
// follow Python for negative operands (floor, sign of the divisor); division
// by zero fails like Python's ZeroDivisionError.
#include <cmath>
#include <cstdint>

#include "kernels/generated/functions/prim/scalar_ops.h"

namespace ember::kernels::prim {
namespace {

bool is_intlike(const EValue& v) { return v.is_int() || v.is_bool(); }

void set_int(EValue& v, int64_t x) {
  v.tag = Tag::Int;
  v.as_int = x;
}
void set_double(EValue& v, double x) {
  v.tag = Tag::Double;
  v.as_double = x;
}
void set_bool(EValue& v, bool x) {
  v.tag = Tag::Bool;
  v.as_bool = x;
}

int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

// Python's int // and % (floor division; remainder has the divisor's sign).
int64_t py_floordiv(int64_t a, int64_t b) {
  if (b == -1) return wrap(0 - static_cast<uint64_t>(a));  // INT64_MIN // -1 wraps.
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t py_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python's float // and % (CPython's float_divmod).
double py_fmod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = std::copysign(0.0, b);
  }
  return m;
}
double py_ffloordiv(double a, double b) {
  const double m = std::fmod(a, b);
  double div = (a - m) / b;
  if (m != 0.0 && ((b < 0) != (m < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

enum class BinOp { Add, Sub, Mul, FloorDiv, TrueDiv, Mod, Max, Min };

template <BinOp kOp>
void binary_op(KernelContext& ctx, const EValue& a, const EValue& b, EValue& out) {
  if (kOp != BinOp::TrueDiv && is_intlike(a) && is_intlike(b)) {
    const int64_t x = a.scalar_as_int();
    const int64_t y = b.scalar_as_int();
    const uint64_t ux = static_cast<uint64_t>(x);
    const uint64_t uy = static_cast<uint64_t>(y);
    switch (kOp) {
      case BinOp::Add: set_int(out, wrap(ux + uy)); return;
      case BinOp::Sub: set_int(out, wrap(ux - uy)); return;
      case BinOp::Mul: set_int(out, wrap(ux * uy)); return;
      case BinOp::Max: set_int(out, x > y ? x : y); return;
      case BinOp::Min: set_int(out, x < y ? x : y); return;
      case BinOp::FloorDiv:
      case BinOp::Mod:
        if (y == 0) {
          ctx.fail(Error::InvalidArgument, "integer division or modulo by zero (%lld, 0)",
                   static_cast<long long>(x));
          return;
        }
        set_int(out, kOp == BinOp::FloorDiv ? py_floordiv(x, y) : py_mod(x, y));
        return;
      case BinOp::TrueDiv: return;
    }
  }
  const double x = a.scalar_as_double();
  const double y = b.scalar_as_double();
  if ((kOp == BinOp::FloorDiv || kOp == BinOp::TrueDiv || kOp == BinOp::Mod) && y == 0.0) {
    ctx.fail(Error::InvalidArgument, "float division or modulo by zero (%g, 0)", x);
    return;
  }
  switch (kOp) {
    case BinOp::Add: set_double(out, x + y); return;
    case BinOp::Sub: set_double(out, x - y); return;
    case BinOp::Mul: set_double(out, x * y); return;
    case BinOp::TrueDiv: set_double(out, x / y); return;
    case BinOp::FloorDiv: set_double(out, py_ffloordiv(x, y)); return;
    case BinOp::Mod: set_double(out, py_fmod(x, y)); return;
    // NaN propagates like torch.sym_max on floats.
    case BinOp::Max: set_double(out, (std::isnan(x) || x > y) ? x : y); return;
    case BinOp::Min: set_double(out, (std::isnan(x) || x < y) ? x : y); return;
  }
}

enum class CmpOp { Eq, Gt, Ge, Lt, Le };

template <CmpOp kOp>
void compare_op(const EValue& a, const EValue& b, EValue& out) {
  bool r;
  if (is_intlike(a) && is_intlike(b)) {
    // Exact for all int64 values (a double would round above 2^53).
    const int64_t x = a.scalar_as_int();
    const int64_t y = b.scalar_as_int();
    r = kOp == CmpOp::Eq ? x == y : kOp == CmpOp::Gt ? x > y : kOp == CmpOp::Ge ? x >= y
        : kOp == CmpOp::Lt ? x < y : x <= y;
  } else {
    const double x = a.scalar_as_double();
    const double y = b.scalar_as_double();
    r = kOp == CmpOp::Eq ? x == y : kOp == CmpOp::Gt ? x > y : kOp == CmpOp::Ge ? x >= y
        : kOp == CmpOp::Lt ? x < y : x <= y;
  }
  set_bool(out, r);
}

enum class RoundOp { Ceil, Round, Trunc };

template <RoundOp kOp>
void round_op(KernelContext& ctx, const EValue& a, EValue& out) {
  if (!a.is_double()) {
    set_int(out, a.scalar_as_int());
    return;
  }
  const double x = a.as_double;
  double r;
  if (kOp == RoundOp::Ceil) {
    r = std::ceil(x);
  } else if (kOp == RoundOp::Trunc) {
    r = std::trunc(x);
  } else {
    // Python's round(): to nearest, ties to even, regardless of the FPU mode.
    r = std::round(x);
    if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  }
  if (!std::isfinite(r) || r < -9.2233720368547758e18 || r >= 9.2233720368547758e18) {
    ctx.fail(Error::InvalidArgument, "cannot convert %g to an integer", x);
    return;
  }
  set_int(out, static_cast<int64_t>(r));
}

}  // namespace

// One typed kernel per op over the shared template.
#define EMBER_PRIM_BINARY(fn, kind)                                               \
  void fn(KernelContext& ctx, const EValue& a, const EValue& b, EValue& result) { \
    binary_op<BinOp::kind>(ctx, a, b, result);                                    \
  }
EMBER_PRIM_BINARY(add_Scalar, Add)
EMBER_PRIM_BINARY(sub_Scalar, Sub)
EMBER_PRIM_BINARY(mul_Scalar, Mul)
EMBER_PRIM_BINARY(floordiv_Scalar, FloorDiv)
EMBER_PRIM_BINARY(truediv_Scalar, TrueDiv)
EMBER_PRIM_BINARY(mod_Scalar, Mod)
EMBER_PRIM_BINARY(sym_max_Scalar, Max)
EMBER_PRIM_BINARY(sym_min_Scalar, Min)
#undef EMBER_PRIM_BINARY

#define EMBER_PRIM_COMPARE(fn, kind)                                          \
  void fn(KernelContext&, const EValue& a, const EValue& b, EValue& result) { \
    compare_op<CmpOp::kind>(a, b, result);                                    \
  }
EMBER_PRIM_COMPARE(eq_Scalar, Eq)
EMBER_PRIM_COMPARE(gt_Scalar, Gt)
EMBER_PRIM_COMPARE(ge_Scalar, Ge)
EMBER_PRIM_COMPARE(lt_Scalar, Lt)
EMBER_PRIM_COMPARE(le_Scalar, Le)
#undef EMBER_PRIM_COMPARE

void neg_Scalar(KernelContext&, const EValue& a, EValue& result) {
  if (a.is_double()) {
    set_double(result, -a.as_double);
  } else {
    set_int(result, wrap(0 - static_cast<uint64_t>(a.scalar_as_int())));
  }
}

void ceil_Scalar(KernelContext& ctx, const EValue& a, EValue& result) {
  round_op<RoundOp::Ceil>(ctx, a, result);
}
void round_Scalar(KernelContext& ctx, const EValue& a, EValue& result) {
  round_op<RoundOp::Round>(ctx, a, result);
}
void trunc_Scalar(KernelContext& ctx, const EValue& a, EValue& result) {
  round_op<RoundOp::Trunc>(ctx, a, result);
}
void sym_int_Scalar(KernelContext& ctx, const EValue& a, EValue& result) {
  round_op<RoundOp::Trunc>(ctx, a, result);
}

void sym_float_Scalar(KernelContext&, const EValue& a, EValue& result) {
  set_double(result, a.scalar_as_double());
}

void sym_not_Scalar(KernelContext&, const EValue& a, EValue& result) {
  set_bool(result, a.scalar_as_double() == 0.0);
}

void sym_ite_Scalar(KernelContext&, const EValue& condition, const EValue& if_true,
                    const EValue& if_false, EValue& result) {
  result = condition.scalar_as_double() != 0.0 ? if_true : if_false;
}

}  // namespace ember::kernels::prim
