// aten::randn.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
// Standard normal samples into out (float32, float64, float16, bfloat16).
//
// Generator (documented so results can be reproduced elsewhere): the 64-bit
// state in `ctx.rng_state()` advances as splitmix64 (state += 0x9E3779B97F4A7C15,
// then the splitmix64 finaliser gives the output word). Each pair of outputs
// u, v gives uniforms u1 = ((u >> 11) + 1) * 2^-53 in (0, 1] and
// u2 = (v >> 11) * 2^-53 in [0, 1); Box–Muller turns them into
// r·cos(2π u2), r·sin(2π u2) with r = sqrt(-2 ln u1), computed in double and
// rounded to out's dtype. Values fill out in logical row-major order, so the
// result does not depend on out's dim order. Not PyTorch's generator: values
// differ from torch.randn, the distribution is the same.
#include <cmath>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/random.h"
#include "kernels/generated/functions/portable/op_randn.h"

namespace ember::kernels::portable {

void randn_out(KernelContext& ctx, IntSpan size, Tensor& out) {
  int32_t shape[kTensorMaxDim];
  if (!size_to_shape(ctx, size, shape)) return;
  if (!resize_out(ctx, out, {shape, size.size()})) return;
  uint64_t& state = ctx.rng_state();
  const bool ok = dispatch_dtype<kFloating>(out.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    S* d = out.data_ptr<S>();
    double spare = 0.0;
    bool have_spare = false;
    StridedLoop<1> loop;
    const int64_t* strides[1] = {out.strides};
    loop.init(out.shape(), strides);
    loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i) {
        double z;
        if (have_spare) {
          z = spare;
          have_spare = false;
        } else {
          const double u1 = static_cast<double>((rng_next(state) >> 11) + 1) * 0x1.0p-53;
          const double u2 = static_cast<double>(rng_next(state) >> 11) * 0x1.0p-53;
          const double r = std::sqrt(-2.0 * std::log(u1));
          const double theta = 6.283185307179586476925 * u2;
          z = r * std::cos(theta);
          spare = r * std::sin(theta);
          have_spare = true;
        }
        d[off[0] + i * st[0]] = convert<S>(static_cast<compute_t<S>>(z));
      }
    });
  });
  if (!ok) fail_dtype(ctx, "out", out.dtype);
}

}  // namespace ember::kernels::portable
