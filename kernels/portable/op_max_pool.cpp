// aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[],
//     int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out,
//     Tensor(b!) indices)
// aten::max_pool3d_with_indices.out(... the same with int[3] ...)
//
// indices (int64) are flat positions within each input plane (d·H·W + h·W + w),
// as in eager; the first maximum wins, and a NaN wins over numbers (the last
// NaN, as eager's loop does). Real dtypes; any dim order.
#include <algorithm>

#include "kernels/generated/kernel_functions.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/reduce.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
void max_pool(const Tensor& input, Tensor& out, Tensor& indices, const PoolGeometry& g) {
  using CT = compute_t<S>;
  int64_t ix_n = 0, ix_c = 0, ix_sp[3];
  pool_out_strides(input, indices, g.nd, &ix_n, &ix_c, ix_sp);
  const S* x = input.data_ptr<const S>();
  S* y = out.data_ptr<S>();
  int64_t* ix = indices.data_ptr<int64_t>();
  const CT lowest = std::numeric_limits<CT>::has_infinity ? -std::numeric_limits<CT>::infinity()
                                                          : std::numeric_limits<CT>::lowest();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.channels; ++c) {
      const S* plane = x + g.in_offset(n, c);
      for (int64_t od = 0; od < g.out[0]; ++od) {
        int64_t d0 = od * g.s[0] - g.p[0];
        const int64_t d1 = std::min(d0 + (g.k[0] - 1) * g.d[0] + 1, g.in[0]);
        while (d0 < 0) d0 += g.d[0];
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          int64_t h0 = oh * g.s[1] - g.p[1];
          const int64_t h1 = std::min(h0 + (g.k[1] - 1) * g.d[1] + 1, g.in[1]);
          while (h0 < 0) h0 += g.d[1];
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            int64_t w0 = ow * g.s[2] - g.p[2];
            const int64_t w1 = std::min(w0 + (g.k[2] - 1) * g.d[2] + 1, g.in[2]);
            while (w0 < 0) w0 += g.d[2];
            CT best = lowest;
            int64_t best_i = (d0 * g.in[1] + h0) * g.in[2] + w0;
            for (int64_t id = d0; id < d1; id += g.d[0]) {
              for (int64_t ih = h0; ih < h1; ih += g.d[1]) {
                const S* row = plane + id * g.in_sp[0] + ih * g.in_sp[1];
                for (int64_t iw = w0; iw < w1; iw += g.d[2]) {
                  const CT v = convert<CT>(row[iw * g.in_sp[2]]);
                  if (v > best || is_nan_value(v)) {
                    best = v;
                    best_i = (id * g.in[1] + ih) * g.in[2] + iw;
                  }
                }
              }
            }
            y[g.out_offset(n, c) + od * g.out_sp[0] + oh * g.out_sp[1] + ow * g.out_sp[2]] =
                convert<S>(best);
            ix[n * ix_n + c * ix_c + od * ix_sp[0] + oh * ix_sp[1] + ow * ix_sp[2]] = best_i;
          }
        }
      }
    }
  }
}

template <int kNd>
void max_pool_with_indices_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                               IntSpan stride, IntSpan padding, IntSpan dilation, bool ceil_mode,
                               Tensor& out, Tensor& indices) {
  PoolGeometry g;
  if (!pool_input(ctx, self, kNd, &g) ||
      !pool_windows(ctx, kernel_size, stride, padding, dilation, ceil_mode, &g)) {
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype) ||
      !check_dtype(ctx, indices, "indices", ScalarType::Long)) {
    return;
  }
  if (!pool_resize_out(ctx, self, out, &g) || !resize_out(ctx, indices, out.shape())) return;
  if (out.numel == 0) return;
  const bool ok = dispatch_dtype<kRealTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    max_pool<S>(self, out, indices, g);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

}  // namespace

void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                                 IntSpan stride, IntSpan padding, IntSpan dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  max_pool_with_indices_out<2>(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out,
                               indices);
}

void max_pool3d_with_indices_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                                 IntSpan stride, IntSpan padding, IntSpan dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  max_pool_with_indices_out<3>(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out,
                               indices);
}

}  // namespace ember::kernels::portable
