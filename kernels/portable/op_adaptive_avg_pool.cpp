// aten::_adaptive_avg_pool2d.out(Tensor self, SymInt[2] output_size, *, Tensor(a!) out)
// aten::_adaptive_avg_pool3d.out(Tensor self, SymInt[3] output_size, *, Tensor(a!) out)
//
// Output cell o of a dim covers input [floor(o·in/out), ceil((o+1)·in/out)).
// Floating dtypes, any dim order. Summed as eager sums, bit for bit: one
// float32 chain (float64 for double) in window order d, h, w, then divided by
// the window's depth, height and width in turn (see op_avg_pool.cpp for why
// quantized programs need eager's exact rounding).
#include "kernels/generated/functions/portable/op_adaptive_avg_pool.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/pool.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
void adaptive_avg_pool(const Tensor& input, Tensor& out, const PoolGeometry& g) {
  using Acc = std::conditional_t<std::is_same_v<S, double>, double, float>;
  const S* x = input.data_ptr<const S>();
  S* y = out.data_ptr<S>();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.channels; ++c) {
      const S* plane = x + g.in_offset(n, c);
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const int64_t d0 = adaptive_start(od, g.out[0], g.in[0]);
        const int64_t d1 = adaptive_end(od, g.out[0], g.in[0]);
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const int64_t h0 = adaptive_start(oh, g.out[1], g.in[1]);
          const int64_t h1 = adaptive_end(oh, g.out[1], g.in[1]);
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            const int64_t w0 = adaptive_start(ow, g.out[2], g.in[2]);
            const int64_t w1 = adaptive_end(ow, g.out[2], g.in[2]);
            Acc sum = 0;
            for (int64_t id = d0; id < d1; ++id) {
              for (int64_t ih = h0; ih < h1; ++ih) {
                const S* row = plane + id * g.in_sp[0] + ih * g.in_sp[1];
                for (int64_t iw = w0; iw < w1; ++iw) sum += convert<Acc>(row[iw * g.in_sp[2]]);
              }
            }
            const Acc mean = sum / static_cast<Acc>(d1 - d0) / static_cast<Acc>(h1 - h0) /
                             static_cast<Acc>(w1 - w0);
            y[g.out_offset(n, c) + od * g.out_sp[0] + oh * g.out_sp[1] + ow * g.out_sp[2]] =
                convert<S>(mean);
          }
        }
      }
    }
  }
}

template <int kNd>
void adaptive_avg_pool_out(KernelContext& ctx, const Tensor& self, IntSpan output_size,
                           Tensor& out) {
  PoolGeometry g;
  if (!pool_input(ctx, self, kNd, &g)) return;
  EMBER_KERNEL_CHECK(ctx, output_size.size() == static_cast<size_t>(kNd),
                     "output_size: expected %d values, got %s", kNd,
                     ShapeStr(output_size).c_str());
  for (int i = 0; i < kNd; ++i) {
    EMBER_KERNEL_CHECK(ctx, output_size[i] >= 0 && output_size[i] <= INT32_MAX,
                       "output_size: %s has a negative value", ShapeStr(output_size).c_str());
    g.out[3 - kNd + i] = output_size[i];
  }
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  if (!pool_resize_out(ctx, self, out, &g)) return;
  if (out.numel == 0) return;
  const bool ok = dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    adaptive_avg_pool<S>(self, out, g);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

}  // namespace

void _adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& self, IntSpan output_size,
                              Tensor& out) {
  adaptive_avg_pool_out<2>(ctx, self, output_size, out);
}

void _adaptive_avg_pool3d_out(KernelContext& ctx, const Tensor& self, IntSpan output_size,
                              Tensor& out) {
  adaptive_avg_pool_out<3>(ctx, self, output_size, out);
}

}  // namespace ember::kernels::portable
