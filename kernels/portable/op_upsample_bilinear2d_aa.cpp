// aten::_upsample_bilinear2d_aa.out(Tensor self, SymInt[2] output_size, bool align_corners,
//     float? scales_h=None, float? scales_w=None, *, Tensor(a!) out) -> Tensor(a!)
//
// Antialiased bilinear resize (F.interpolate(..., antialias=True)): each
// output pixel is a weighted sum over a window of input pixels, the triangle
// filter stretched by the scale when downsampling, separably along H then W.
// Per axis, as eager computes it: scale = align_corners ? (in - 1) / (out - 1)
// (0 for out 1) : 1 / scale_arg (in / out without one); support = max(scale,
// 1); center = scale · (i + 0.5); the window is [trunc(center - support + 0.5)
// clamped to 0, trunc(center + support + 0.5) clamped to in); tap j weighs
// max(0, 1 - |(j - center + 0.5) / max(scale, 1)|), normalised to sum 1. The
// H pass's result is rounded to self's dtype before the W pass (eager keeps a
// buffer of that dtype); an axis whose size does not change is copied. Floating
// dtypes; self [N, C, H, W] in any dim order.
#include <algorithm>
#include <cmath>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_upsample_bilinear2d_aa.h"

namespace ember::kernels::portable {
namespace {

template <typename CT>
struct AaAxis {
  int64_t in = 0, out = 0;
  CT scale = 0, support = 0, invscale = 1;
  bool identity = false;

  // Window [*lo, *lo + *n) and normaliser of output index i.
  void window(int64_t i, int64_t* lo, int64_t* n, CT* total) const {
    const CT center = scale * (static_cast<CT>(i) + CT(0.5));
    *lo = std::max<int64_t>(static_cast<int64_t>(center - support + CT(0.5)), 0);
    const int64_t max_n = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
    *n = std::clamp<int64_t>(
        std::min<int64_t>(static_cast<int64_t>(center + support + CT(0.5)), in) - *lo, 0, max_n);
    CT t = 0;
    for (int64_t j = 0; j < *n; ++j) t += weight(i, *lo + j);
    *total = t;
  }
  CT weight(int64_t i, int64_t at) const {
    const CT center = scale * (static_cast<CT>(i) + CT(0.5));
    CT x = (static_cast<CT>(at) - center + CT(0.5)) * invscale;
    x = x < 0 ? -x : x;
    return x < 1 ? 1 - x : CT(0);
  }
};

template <typename CT>
AaAxis<CT> make_axis(int64_t in, int64_t out, bool align_corners, std::optional<double> s) {
  AaAxis<CT> a;
  a.in = in;
  a.out = out;
  a.identity = in == out;
  if (align_corners) {
    a.scale = out > 1 ? static_cast<CT>(in - 1) / static_cast<CT>(out - 1) : CT(0);
  } else {
    a.scale = s.has_value() && *s > 0 ? static_cast<CT>(1.0 / *s)
                                      : static_cast<CT>(in) / static_cast<CT>(out);
  }
  a.support = a.scale >= 1 ? a.scale : CT(1);
  a.invscale = a.scale >= 1 ? 1 / a.scale : CT(1);
  return a;
}

template <typename S>
void resize_aa(const Tensor& self, Tensor& out, bool align_corners, std::optional<double> sh,
               std::optional<double> sw) {
  using CT = compute_t<S>;
  const AaAxis<CT> ah = make_axis<CT>(self.sizes[2], out.sizes[2], align_corners, sh);
  const AaAxis<CT> aw = make_axis<CT>(self.sizes[3], out.sizes[3], align_corners, sw);
  const S* x = self.data_ptr<const S>();
  S* y = out.data_ptr<S>();
  const int64_t* is = self.strides;
  const int64_t* os = out.strides;
  for (int64_t n = 0; n < out.sizes[0]; ++n) {
    for (int64_t c = 0; c < out.sizes[1]; ++c) {
      const S* plane = x + n * is[0] + c * is[1];
      // The H pass at input column col, rounded to S as eager's buffer is.
      auto vertical = [&](int64_t oh, int64_t col, int64_t lo, int64_t cnt, CT total) -> CT {
        if (ah.identity) return convert<CT>(plane[oh * is[2] + col * is[3]]);
        CT t = 0;
        for (int64_t j = 0; j < cnt; ++j) {
          const CT wgt = total != 0 ? ah.weight(oh, lo + j) / total : ah.weight(oh, lo + j);
          t += convert<CT>(plane[(lo + j) * is[2] + col * is[3]]) * wgt;
        }
        return convert<CT>(convert<S>(t));
      };
      for (int64_t oh = 0; oh < out.sizes[2]; ++oh) {
        int64_t hlo = 0, hn = 0;
        CT htotal = 0;
        if (!ah.identity) ah.window(oh, &hlo, &hn, &htotal);
        for (int64_t ow = 0; ow < out.sizes[3]; ++ow) {
          CT v;
          if (aw.identity) {
            v = vertical(oh, ow, hlo, hn, htotal);
          } else {
            int64_t wlo = 0, wn = 0;
            CT wtotal = 0;
            aw.window(ow, &wlo, &wn, &wtotal);
            v = 0;
            for (int64_t j = 0; j < wn; ++j) {
              const CT wgt =
                  wtotal != 0 ? aw.weight(ow, wlo + j) / wtotal : aw.weight(ow, wlo + j);
              v += vertical(oh, wlo + j, hlo, hn, htotal) * wgt;
            }
          }
          y[n * os[0] + c * os[1] + oh * os[2] + ow * os[3]] = convert<S>(v);
        }
      }
    }
  }
}

}  // namespace

void _upsample_bilinear2d_aa_out(KernelContext& ctx, const Tensor& self, IntSpan output_size,
                                 bool align_corners, std::optional<double> scales_h,
                                 std::optional<double> scales_w, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, self.dim == 4, "self: expected [N, C, H, W], got shape %s",
                     ShapeStr(self.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, output_size.size() == 2, "output_size: expected 2 sizes, got %zu",
                     output_size.size());
  EMBER_KERNEL_CHECK(ctx, output_size[0] > 0 && output_size[1] > 0 && output_size[0] <= INT32_MAX &&
                              output_size[1] <= INT32_MAX,
                     "output_size: expected positive sizes, got [%lld, %lld]",
                     static_cast<long long>(output_size[0]),
                     static_cast<long long>(output_size[1]));
  EMBER_KERNEL_CHECK(ctx, self.sizes[2] > 0 && self.sizes[3] > 0,
                     "self: spatial dims must be non-empty, got shape %s",
                     ShapeStr(self.shape()).c_str());
  if (!is_floating_type(self.dtype)) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  const int32_t sizes[4] = {self.sizes[0], self.sizes[1], static_cast<int32_t>(output_size[0]),
                            static_cast<int32_t>(output_size[1])};
  if (!resize_out(ctx, out, sizes)) return;
  if (out.numel == 0) return;
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    resize_aa<S>(self, out, align_corners, scales_h, scales_w);
  });
}

}  // namespace ember::kernels::portable
