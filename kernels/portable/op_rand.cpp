// Random ops, all drawing from `ctx.rng_state()` with the generator of
// util/random.h (the one op_randn.cpp documents). Values fill out in logical
// row-major order, so they do not depend on out's dim order. Not PyTorch's
// generator: the values differ from eager, the distributions are the same.
//
// aten::rand.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
//   Uniform in [0, 1): each value takes the top p bits of one 64-bit word
//   times 2^-p, p being the precision of out's dtype (53 float64, 24 float32,
//   11 float16, 8 bfloat16), so it is exact.
// aten::randperm.out(SymInt n, *, Tensor(a!) out) -> Tensor(a!)
//   A random permutation of 0..n-1 (out 1-D, any real dtype able to hold
//   n - 1): Fisher–Yates from the last position down, position i swapping
//   with rng_below(i + 1).
// aten::native_dropout.out(Tensor input, float p, bool? train, *,
//     Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))
//   With train false (eval): out0 = input, out1 (bool mask) all true.
//   Otherwise (train true or None) each element is kept when
//   rng_uniform(53 bits) >= p, and out0 = input * mask / (1 - p) (0 everywhere
//   for p = 1). Floating dtypes; out0 has input's dtype.
#include <limits>
#include <type_traits>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/random.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_rand.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
constexpr int kPrecisionBits = std::is_same_v<S, double> ? 53
                               : std::is_same_v<S, float> ? 24
                               : std::is_same_v<S, Half>  ? 11
                                                          : 8;

}  // namespace

void rand_out(KernelContext& ctx, IntSpan size, Tensor& out) {
  int32_t shape[kTensorMaxDim];
  if (!size_to_shape(ctx, size, shape)) return;
  if (!is_floating_type(out.dtype)) {
    fail_dtype(ctx, "out", out.dtype);
    return;
  }
  if (!resize_out(ctx, out, {shape, size.size()})) return;
  uint64_t& state = ctx.rng_state();
  const bool ok = dispatch_dtype<kFloating>(out.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    S* d = out.data_ptr<S>();
    for_each_index(out.shape(), [&](const int32_t* idx) {
      const double u = rng_uniform(state, kPrecisionBits<S>);
      d[offset_of(idx, out.strides, out.dim)] = convert<S>(static_cast<compute_t<S>>(u));
      return true;
    });
  });
  if (!ok) fail_dtype(ctx, "out", out.dtype);
}

void randperm_out(KernelContext& ctx, int64_t n, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, n >= 0 && n <= INT32_MAX, "n: must be in [0, 2^31), got %lld",
                     static_cast<long long>(n));
  EMBER_KERNEL_CHECK(ctx, out.dim == 1, "out: expected 1 dim, got shape %s",
                     ShapeStr(out.shape()).c_str());
  const int32_t size[1] = {static_cast<int32_t>(n)};
  if (!resize_out(ctx, out, size)) return;
  uint64_t& state = ctx.rng_state();
  const bool ok = dispatch_dtype<kRealTypes>(out.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    // n - 1 must be representable exactly.
    double max_exact = 0;
    if constexpr (std::is_integral_v<S>) {
      max_exact = static_cast<double>(std::numeric_limits<S>::max());
    } else {
      max_exact = double(uint64_t{1} << kPrecisionBits<S>);
    }
    EMBER_KERNEL_CHECK(ctx, n == 0 || static_cast<double>(n - 1) <= max_exact,
                       "n: %lld is too large for out's dtype %s", static_cast<long long>(n),
                       scalar_type_name(out.dtype));
    S* d = out.data_ptr<S>();
    const int64_t st = n > 0 ? out.strides[0] : 1;
    for (int64_t i = 0; i < n; ++i) d[i * st] = convert<S>(static_cast<compute_t<S>>(i));
    for (int64_t i = n - 1; i > 0; --i) {
      const int64_t j = static_cast<int64_t>(rng_below(state, static_cast<uint64_t>(i) + 1));
      const S t = d[i * st];
      d[i * st] = d[j * st];
      d[j * st] = t;
    }
  });
  if (!ok) fail_dtype(ctx, "out", out.dtype);
}

void native_dropout_out(KernelContext& ctx, const Tensor& input, double p,
                        std::optional<bool> train, Tensor& out0, Tensor& out1) {
  const bool training = train.value_or(true);  // None counts as true.
  if (!check_dtype(ctx, out0, "out0", input.dtype) ||
      !check_dtype(ctx, out1, "out1", ScalarType::Bool)) {
    return;
  }
  if (!is_floating_type(input.dtype)) {
    fail_dtype(ctx, "input", input.dtype);
    return;
  }
  EMBER_KERNEL_CHECK(ctx, p >= 0.0 && p <= 1.0, "p: must be in [0, 1], got %g", p);
  if (!resize_out(ctx, out0, input.shape()) || !resize_out(ctx, out1, input.shape())) return;
  if (input.numel == 0) return;
  BoolByte* m = out1.data_ptr<BoolByte>();
  if (!training) {
    strided_copy(input, input.strides, out0);
    for (int64_t i = 0; i < out1.numel; ++i) m[i] = BoolByte(true);  // Dense in any dim order.
    return;
  }
  uint64_t& state = ctx.rng_state();
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  (void)dispatch_dtype<kFloating>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const S* x = input.data_ptr<S>();
    S* o = out0.data_ptr<S>();
    for_each_index(input.shape(), [&](const int32_t* idx) {
      const bool keep = p < 1.0 && rng_uniform(state, 53) >= p;
      const CT xv = convert<CT>(x[offset_of(idx, input.strides, input.dim)]);
      const CT v = keep ? static_cast<CT>(xv * static_cast<CT>(scale)) : CT(0);
      o[offset_of(idx, out0.strides, out0.dim)] = convert<S>(v);
      m[offset_of(idx, out1.strides, out1.dim)] = BoolByte(keep);
      return true;
    });
  });
}

}  // namespace ember::kernels::portable
