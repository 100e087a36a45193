// ember_fused::to_nchw16c.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// ember_fused::from_nchw16c.out(Tensor self, int channels, *, Tensor(a!) out) -> Tensor(a!)
//
// The edges of a chain of NCHW16c convolutions (util/conv_nchw16c.h):
// to_nchw16c turns a float32 [N, C, H, W] tensor (any dim order) into the
// channel-blocked [N, ⌈C/16⌉, H, W, 16], channels past C zero;
// from_nchw16c turns one back into a contiguous [N, channels, H, W]
// (channels ≤ 16·blocks; the blocks' padding is dropped).
// passes/nchw16c_layout.py writes one where a blocked chain starts or ends.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/conv_nchw16c.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/generated/functions/portable/op_nchw16c_layout.h"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kB = kNchw16cBlock;

// Blocks of `positions` a task takes at least (a copy is memory-bound).
int64_t min_units(int64_t positions) {
  const int64_t per_unit = positions * kB;
  return per_unit > 0 ? (kParallelMinCopyElements + per_unit - 1) / per_unit : 1;
}

}  // namespace

void to_nchw16c_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, self.dtype == ScalarType::Float,
                     "self: dtype %s is not supported (float32 only)",
                     scalar_type_name(self.dtype));
  EMBER_KERNEL_CHECK(ctx, self.dim == 4, "self: expected [N, C, H, W], got %d dimensions",
                     self.dim);
  if (!check_dtype(ctx, out, "out", ScalarType::Float)) return;
  const int64_t n = self.size(0), c = self.size(1), h = self.size(2), w = self.size(3);
  const int64_t cb = (c + kB - 1) / kB;
  const int32_t sizes[5] = {self.size(0), static_cast<int32_t>(cb), self.size(2), self.size(3),
                            static_cast<int32_t>(kB)};
  if (!resize_out(ctx, out, sizes)) return;
  EMBER_KERNEL_CHECK(ctx, out.is_contiguous_dim_order(), "out: must be contiguous");
  EMBER_KERNEL_CHECK(ctx, !tensors_overlap(self, out),
                     "self: its memory overlaps the output's");
  const float* x = self.data_ptr<const float>();
  float* o = out.data_ptr<float>();
  const int64_t sn = self.strides[0], sc = self.strides[1], sh = self.strides[2],
                sw = self.strides[3];
  // One task per (image, block): 16 planes interleaved into one.
  parallel_range(ctx, n * cb, min_units(h * w), 1, [&](int64_t first, int64_t last) {
    for (int64_t u = first; u < last; ++u) {
      const int64_t img = u / cb, b = u % cb;
      const int64_t lanes = c - b * kB < kB ? c - b * kB : kB;
      float* dst = o + u * h * w * kB;
      const float* src = x + img * sn + b * kB * sc;
      for (int64_t y = 0; y < h; ++y) {
        for (int64_t xx = 0; xx < w; ++xx) {
          float* d = dst + (y * w + xx) * kB;
          const float* s = src + y * sh + xx * sw;
          for (int64_t l = 0; l < lanes; ++l) d[l] = s[l * sc];
          for (int64_t l = lanes; l < kB; ++l) d[l] = 0.0f;
        }
      }
    }
  });
}

void from_nchw16c_out(KernelContext& ctx, const Tensor& self, int64_t channels, Tensor& out) {
  if (!check_nchw16c_tensor(ctx, self, "self")) return;
  EMBER_KERNEL_CHECK(ctx, channels >= 0 && channels <= self.size(1) * kB &&
                              (channels + kB - 1) / kB == self.size(1),
                     "channels: %lld does not fill the %d blocks of self",
                     static_cast<long long>(channels), self.size(1));
  if (!check_dtype(ctx, out, "out", ScalarType::Float)) return;
  const int64_t n = self.size(0), cb = self.size(1), h = self.size(2), w = self.size(3);
  const int32_t sizes[4] = {self.size(0), static_cast<int32_t>(channels), self.size(2),
                            self.size(3)};
  if (!resize_out(ctx, out, sizes)) return;
  EMBER_KERNEL_CHECK(ctx, !tensors_overlap(self, out),
                     "self: its memory overlaps the output's");
  const float* x = self.data_ptr<const float>();
  float* o = out.data_ptr<float>();
  const int64_t on = out.strides[0], oc = out.strides[1], oh = out.strides[2],
                ow = out.strides[3];
  parallel_range(ctx, n * cb, min_units(h * w), 1, [&](int64_t first, int64_t last) {
    for (int64_t u = first; u < last; ++u) {
      const int64_t img = u / cb, b = u % cb;
      const int64_t lanes = channels - b * kB < kB ? channels - b * kB : kB;
      const float* src = x + u * h * w * kB;
      float* dst = o + img * on + b * kB * oc;
      for (int64_t y = 0; y < h; ++y) {
        for (int64_t xx = 0; xx < w; ++xx) {
          const float* s = src + (y * w + xx) * kB;
          float* d = dst + y * oh + xx * ow;
          for (int64_t l = 0; l < lanes; ++l) d[l * oc] = s[l];
        }
      }
    }
  });
}

}  // namespace ember::kernels::portable
