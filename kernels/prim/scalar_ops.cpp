// Symbolic-scalar ops (executorch_prim::*.Scalar): arithmetic on SymInt /
// SymFloat / SymBool values computed at run time, with Python semantics.
//
// Every op gets its scalar operands (Int, Double or Bool EValues), then the
// output value, which it overwrites (tag and payload):
//   add, sub, mul, floordiv, mod, sym_max, sym_min  (a, b, out): Int when
//       both operands are Int/Bool, Double otherwise;
//   truediv (a, b, out): Double;
//   eq, gt, ge, lt, le (a, b, out): Bool;
//   neg (a, out): Int or Double like a (Bool negates as Int);
//   ceil, round, trunc (a, out): Int (round is half-to-even, like Python);
//   sym_float (a, out): Double; sym_int (a, out): Int, truncating;
//   sym_not (a, out): Bool;
//   sym_ite (cond, then, else, out): a copy of `then` or `else`.
// floordiv and mod follow Python for negative operands (floor, sign of the
// divisor); division by zero fails like Python's ZeroDivisionError.
#include <cmath>
#include <cstdint>

#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::prim {
namespace {

bool check_scalar(KernelContext& ctx, EValue** args, int i, const char* name) {
  if (args[i] == nullptr || !args[i]->is_scalar()) {
    ctx.fail(Error::InvalidArgument, "%s (index %d) must be an Int, Double or Bool, got %s",
             name, i, args[i] ? tag_name(args[i]->tag) : "null");
    return false;
  }
  return true;
}

bool is_intlike(const EValue& v) { return v.is_int() || v.is_bool(); }

void set_int(EValue* v, int64_t x) {
  v->tag = Tag::Int;
  v->as_int = x;
}
void set_double(EValue* v, double x) {
  v->tag = Tag::Double;
  v->as_double = x;
}
void set_bool(EValue* v, bool x) {
  v->tag = Tag::Bool;
  v->as_bool = x;
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
void binary_op(KernelContext& ctx, EValue** args) {
  if (!check_scalar(ctx, args, 0, "a") || !check_scalar(ctx, args, 1, "b")) return;
  const EValue& a = *args[0];
  const EValue& b = *args[1];
  EValue* out = args[2];
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
void compare_op(KernelContext& ctx, EValue** args) {
  if (!check_scalar(ctx, args, 0, "a") || !check_scalar(ctx, args, 1, "b")) return;
  const EValue& a = *args[0];
  const EValue& b = *args[1];
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
  set_bool(args[2], r);
}

void neg_scalar(KernelContext& ctx, EValue** args) {
  if (!check_scalar(ctx, args, 0, "a")) return;
  const EValue& a = *args[0];
  if (a.is_double()) {
    set_double(args[1], -a.as_double);
  } else {
    set_int(args[1], wrap(0 - static_cast<uint64_t>(a.scalar_as_int())));
  }
}

enum class RoundOp { Ceil, Round, Trunc };

template <RoundOp kOp>
void round_op(KernelContext& ctx, EValue** args) {
  if (!check_scalar(ctx, args, 0, "a")) return;
  const EValue& a = *args[0];
  if (!a.is_double()) {
    set_int(args[1], a.scalar_as_int());
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
  set_int(args[1], static_cast<int64_t>(r));
}

void sym_float(KernelContext& ctx, EValue** args) {
  if (!check_scalar(ctx, args, 0, "a")) return;
  set_double(args[1], args[0]->scalar_as_double());
}

void sym_int(KernelContext& ctx, EValue** args) { round_op<RoundOp::Trunc>(ctx, args); }

void sym_not(KernelContext& ctx, EValue** args) {
  if (!check_scalar(ctx, args, 0, "a")) return;
  set_bool(args[1], args[0]->scalar_as_double() == 0.0);
}

void sym_ite(KernelContext& ctx, EValue** args) {
  if (!check_scalar(ctx, args, 0, "cond")) return;
  const EValue* pick = args[0]->scalar_as_double() != 0.0 ? args[1] : args[2];
  if (pick == nullptr || !pick->is_scalar()) {
    ctx.fail(Error::InvalidArgument, "the chosen branch must be an Int, Double or Bool, got %s",
             pick ? tag_name(pick->tag) : "null");
    return;
  }
  *args[3] = *pick;
}

}  // namespace

EMBER_REGISTER_KERNEL("executorch_prim::add.Scalar", binary_op<BinOp::Add>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::sub.Scalar", binary_op<BinOp::Sub>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::mul.Scalar", binary_op<BinOp::Mul>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::floordiv.Scalar", binary_op<BinOp::FloorDiv>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::truediv.Scalar", binary_op<BinOp::TrueDiv>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::mod.Scalar", binary_op<BinOp::Mod>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::sym_max.Scalar", binary_op<BinOp::Max>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::sym_min.Scalar", binary_op<BinOp::Min>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::eq.Scalar", compare_op<CmpOp::Eq>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::gt.Scalar", compare_op<CmpOp::Gt>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::ge.Scalar", compare_op<CmpOp::Ge>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::lt.Scalar", compare_op<CmpOp::Lt>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::le.Scalar", compare_op<CmpOp::Le>, 3);
EMBER_REGISTER_KERNEL("executorch_prim::neg.Scalar", neg_scalar, 2);
EMBER_REGISTER_KERNEL("executorch_prim::ceil.Scalar", round_op<RoundOp::Ceil>, 2);
EMBER_REGISTER_KERNEL("executorch_prim::round.Scalar", round_op<RoundOp::Round>, 2);
EMBER_REGISTER_KERNEL("executorch_prim::trunc.Scalar", round_op<RoundOp::Trunc>, 2);
EMBER_REGISTER_KERNEL("executorch_prim::sym_float.Scalar", sym_float, 2);
EMBER_REGISTER_KERNEL("executorch_prim::sym_int.Scalar", sym_int, 2);
EMBER_REGISTER_KERNEL("executorch_prim::sym_not.Scalar", sym_not, 2);
EMBER_REGISTER_KERNEL("executorch_prim::sym_ite.Scalar", sym_ite, 4);

}  // namespace ember::kernels::prim
