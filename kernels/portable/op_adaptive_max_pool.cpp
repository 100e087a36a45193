// aten::adaptive_max_pool2d.out(Tensor self, int[2] output_size, *, Tensor(a!) out,
//     Tensor(b!) indices)
//
// Output cell o of a dim covers input [floor(o·in/out), ceil((o+1)·in/out)),
// as the adaptive average pool. indices (int64) are flat positions within
// each input plane (h·W + w), as eager; the first maximum wins and a NaN wins
// over numbers (the last NaN), as in max_pool2d. Real dtypes, any dim order;
// nn.functional.adaptive_max_pool1d exports to this op on a height-1 plane.
#include "kernels/generated/functions/portable/op_adaptive_max_pool.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/portable/util/window_max.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
void adaptive_max_pool(const Tensor& input, Tensor& out, Tensor& indices, const PoolGeometry& g) {
  using CT = compute_t<S>;
  int64_t ix_n = 0, ix_c = 0, ix_sp[3];
  pool_out_strides(input, indices, g.nd, &ix_n, &ix_c, ix_sp);
  const S* x = input.data_ptr<const S>();
  S* y = out.data_ptr<S>();
  int64_t* ix = indices.data_ptr<int64_t>();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.channels; ++c) {
      const S* plane = x + g.in_offset(n, c);
      PoolWindow win{{0, 0, 0}, {1, 0, 0}, {1, 1, 1}};
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        win.lo[1] = adaptive_start(oh, g.out[1], g.in[1]);
        win.hi[1] = adaptive_end(oh, g.out[1], g.in[1]);
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          win.lo[2] = adaptive_start(ow, g.out[2], g.in[2]);
          win.hi[2] = adaptive_end(ow, g.out[2], g.in[2]);
          CT best;
          int64_t best_i;
          window_max(plane, g, win, &best, &best_i);
          y[g.out_offset(n, c) + oh * g.out_sp[1] + ow * g.out_sp[2]] = convert<S>(best);
          ix[n * ix_n + c * ix_c + oh * ix_sp[1] + ow * ix_sp[2]] = best_i;
        }
      }
    }
  }
}

}  // namespace

void adaptive_max_pool2d_out(KernelContext& ctx, const Tensor& self, IntSpan output_size,
                             Tensor& out, Tensor& indices) {
  PoolGeometry g;
  if (!pool_input(ctx, self, 2, &g)) return;
  EMBER_KERNEL_CHECK(ctx, output_size.size() == 2, "output_size: expected 2 values, got %s",
                     ShapeStr(output_size).c_str());
  for (int i = 0; i < 2; ++i) {
    EMBER_KERNEL_CHECK(ctx, output_size[i] >= 0 && output_size[i] <= INT32_MAX,
                       "output_size: %s has a negative value", ShapeStr(output_size).c_str());
    g.out[1 + i] = output_size[i];
  }
  if (!check_dtype(ctx, out, "out", self.dtype) ||
      !check_dtype(ctx, indices, "indices", ScalarType::Long)) {
    return;
  }
  if (!pool_resize_out(ctx, self, out, &g) || !resize_out(ctx, indices, out.shape())) return;
  if (out.numel == 0) return;
  const bool ok = dispatch_dtype<kRealTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    adaptive_max_pool<S>(self, out, indices, g);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

}  // namespace ember::kernels::portable
