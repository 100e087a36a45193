// aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//     bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *, Tensor(a!) out)
// aten::avg_pool3d.out(... the same with int[3] ...)
//
// Inputs [N, C, H, W] / [C, H, W] (3-D: [N, C, D, H, W] / [C, D, H, W]), any dim
// order; floating dtypes and int64 (integer division, as eager). The divisor
// follows eager: the window clipped to input + padding with count_include_pad,
// the window clipped to the input without it, or divisor_override.
//
// Floats are summed as eager sums them, bit for bit: one float32 chain (float64
// for double) in window order d, h, w, then divided by the divisor. A wider or
// reordered sum is more accurate but not what eager computes, and quantized
// programs notice: the mean of dequantized int8 values often lies exactly
// halfway between two quantization steps, so a one-ulp difference before the
// next quantize_per_tensor moves the result by a whole step.
#include "kernels/generated/functions/portable/op_avg_pool.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/pool.h"

namespace ember::kernels::portable {
namespace {

template <typename S>
void avg_pool(const Tensor& input, Tensor& out, const PoolGeometry& g, bool count_include_pad,
              int64_t divisor_override) {
  using Acc = std::conditional_t<std::is_same_v<S, double>, double,
                                 std::conditional_t<kIsFloatStorage<S>, float, int64_t>>;
  const S* x = input.data_ptr<const S>();
  S* y = out.data_ptr<S>();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.channels; ++c) {
      const S* plane = x + g.in_offset(n, c);
      S* oplane = y + g.out_offset(n, c);
      for (int64_t od = 0; od < g.out[0]; ++od) {
        int64_t d0 = od * g.s[0] - g.p[0];
        int64_t d1 = d0 + g.k[0] < g.in[0] + g.p[0] ? d0 + g.k[0] : g.in[0] + g.p[0];
        const int64_t pool_d = d1 - d0;
        d0 = d0 < 0 ? 0 : d0;
        d1 = d1 > g.in[0] ? g.in[0] : d1;
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          int64_t h0 = oh * g.s[1] - g.p[1];
          int64_t h1 = h0 + g.k[1] < g.in[1] + g.p[1] ? h0 + g.k[1] : g.in[1] + g.p[1];
          const int64_t pool_h = h1 - h0;
          h0 = h0 < 0 ? 0 : h0;
          h1 = h1 > g.in[1] ? g.in[1] : h1;
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            int64_t w0 = ow * g.s[2] - g.p[2];
            int64_t w1 = w0 + g.k[2] < g.in[2] + g.p[2] ? w0 + g.k[2] : g.in[2] + g.p[2];
            const int64_t pool_w = w1 - w0;
            w0 = w0 < 0 ? 0 : w0;
            w1 = w1 > g.in[2] ? g.in[2] : w1;
            S* dst = oplane + od * g.out_sp[0] + oh * g.out_sp[1] + ow * g.out_sp[2];
            if (d0 >= d1 || h0 >= h1 || w0 >= w1) {
              *dst = convert<S>(0.0f);
              continue;
            }
            Acc sum = 0;
            for (int64_t id = d0; id < d1; ++id) {
              for (int64_t ih = h0; ih < h1; ++ih) {
                const S* row = plane + id * g.in_sp[0] + ih * g.in_sp[1];
                for (int64_t iw = w0; iw < w1; ++iw) sum += convert<Acc>(row[iw * g.in_sp[2]]);
              }
            }
            int64_t divisor = divisor_override;
            if (divisor == 0) {
              divisor = count_include_pad ? pool_d * pool_h * pool_w
                                          : (d1 - d0) * (h1 - h0) * (w1 - w0);
            }
            *dst = convert<S>(sum / static_cast<Acc>(divisor));
          }
        }
      }
    }
  }
}

template <int kNd>
void avg_pool_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size, IntSpan stride,
                  IntSpan padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, divisor_override.value_or(1) != 0,
                     "divisor_override: must not be zero");
  PoolGeometry g;
  if (!pool_input(ctx, self, kNd, &g) ||
      !pool_windows(ctx, kernel_size, stride, padding, std::nullopt, ceil_mode, &g)) {
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  if (!pool_resize_out(ctx, self, out, &g)) return;
  if (out.numel == 0) return;
  const int64_t divisor = divisor_override.value_or(0);  // 0: from the window.
  const bool ok = dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    avg_pool<S>(self, out, g, count_include_pad, divisor);
  });
  if (!ok && self.dtype == ScalarType::Long) {
    avg_pool<int64_t>(self, out, g, count_include_pad, divisor);
  } else if (!ok) {
    fail_dtype(ctx, "self", self.dtype);
  }
}

}  // namespace

void avg_pool2d_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size, IntSpan stride,
                    IntSpan padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override, Tensor& out) {
  avg_pool_out<2>(ctx, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  divisor_override, out);
}

void avg_pool3d_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size, IntSpan stride,
                    IntSpan padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override, Tensor& out) {
  avg_pool_out<3>(ctx, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  divisor_override, out);
}

}  // namespace ember::kernels::portable
