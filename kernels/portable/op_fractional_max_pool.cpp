// aten::fractional_max_pool2d.output(Tensor self, int[2] kernel_size, int[2] output_size,
//     Tensor random_samples, *, Tensor(a!) output, Tensor(b!) indices)
// aten::fractional_max_pool3d.output(Tensor self, int[3] kernel_size, int[3] output_size,
//     Tensor random_samples, *, Tensor(a!) output, Tensor(b!) indices)
//
// self [N, C, (T,) H, W] or unbatched [C, (T,) H, W]; random_samples [N, C, 2|3]
// (N = 1 unbatched), self's dtype: the op is deterministic given them (the
// program draws them with rand). Per plane and axis, window starts follow
// eager's generate_intervals: alpha = (in - k) / (out - 1) and start i =
// trunc((i + u) · alpha) - trunc(u · alpha), the last start in - k, computed
// in the dtype. Samples pair with axes as eager's: 2-D (W, H), 3-D (T, H, W).
// Each output is its window's maximum (the first one; a NaN wins, the last
// NaN), indices (int64) the flat position within the input plane. Floating
// dtypes; any dim order.
#include <cmath>
#include <limits>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_fractional_max_pool.h"

namespace ember::kernels::portable {
namespace {

template <typename CT>
int64_t interval_start(CT u, int64_t i, int64_t in, int64_t out, int64_t k) {
  if (i == out - 1) return in - k;
  const CT alpha = static_cast<CT>(in - k) / static_cast<CT>(out - 1);
  return static_cast<int64_t>(static_cast<int32_t>((static_cast<CT>(i) + u) * alpha)) -
         static_cast<int64_t>(static_cast<int32_t>(u * alpha));
}

// kSp spatial dims (2 or 3). Sample slot of each spatial dim: 2-D (H, W) read
// samples (1, 0); 3-D (T, H, W) read (0, 1, 2).
template <int kSp>
void fractional_max_pool(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                         IntSpan output_size, const Tensor& samples, Tensor& output,
                         Tensor& indices) {
  const int32_t nd = self.dim;
  EMBER_KERNEL_CHECK(ctx, nd == kSp + 1 || nd == kSp + 2,
                     "self: expected %d or %d dims, got shape %s", kSp + 1, kSp + 2,
                     ShapeStr(self.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, kernel_size.size() == kSp && output_size.size() == kSp,
                     "kernel_size, output_size: expected %d values each, got %zu and %zu", kSp,
                     kernel_size.size(), output_size.size());
  if (!is_floating_type(self.dtype)) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (!check_dtype(ctx, samples, "random_samples", self.dtype) ||
      !check_dtype(ctx, output, "output", self.dtype) ||
      !check_dtype(ctx, indices, "indices", ScalarType::Long)) {
    return;
  }
  const bool batched = nd == kSp + 2;
  const int64_t batch = batched ? self.sizes[0] : 1;
  const int64_t channels = self.sizes[batched ? 1 : 0];
  EMBER_KERNEL_CHECK(ctx, samples.dim == 3 && samples.sizes[0] == batch &&
                              samples.sizes[1] == channels && samples.sizes[2] == kSp,
                     "random_samples: expected [%lld, %lld, %d], got shape %s",
                     static_cast<long long>(batch), static_cast<long long>(channels), kSp,
                     ShapeStr(samples.shape()).c_str());
  int64_t in[kSp], out_sz[kSp], k[kSp];
  for (int d = 0; d < kSp; ++d) {
    in[d] = self.sizes[nd - kSp + d];
    out_sz[d] = output_size[d];
    k[d] = kernel_size[d];
    EMBER_KERNEL_CHECK(ctx, k[d] > 0 && out_sz[d] >= 0 && out_sz[d] <= INT32_MAX &&
                                out_sz[d] + k[d] - 1 <= in[d],
                       "output_size, kernel_size: dim %d: output %lld with kernel %lld does "
                       "not fit in input size %lld",
                       d, static_cast<long long>(out_sz[d]), static_cast<long long>(k[d]),
                       static_cast<long long>(in[d]));
  }
  int32_t shape[kTensorMaxDim];
  for (int32_t d = 0; d < nd - kSp; ++d) shape[d] = self.sizes[d];
  for (int d = 0; d < kSp; ++d) shape[nd - kSp + d] = static_cast<int32_t>(out_sz[d]);
  const std::span<const int32_t> oshape{shape, static_cast<size_t>(nd)};
  if (!resize_out(ctx, output, oshape) || !resize_out(ctx, indices, oshape)) return;
  if (output.numel == 0) return;
  constexpr int kSlot[3] = {kSp == 2 ? 1 : 0, kSp == 2 ? 0 : 1, 2};
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    const S* x = self.data_ptr<const S>();
    const S* u = samples.data_ptr<const S>();
    S* y = output.data_ptr<S>();
    int64_t* ix = indices.data_ptr<int64_t>();
    const int32_t lead = nd - kSp;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t xo = (batched ? b * self.strides[0] : 0) + c * self.strides[lead - 1];
        const int64_t yo = (batched ? b * output.strides[0] : 0) + c * output.strides[lead - 1];
        const int64_t io = (batched ? b * indices.strides[0] : 0) + c * indices.strides[lead - 1];
        CT uv[kSp];
        for (int d = 0; d < kSp; ++d) {
          uv[d] = convert<CT>(u[b * samples.strides[0] + c * samples.strides[1] +
                                kSlot[d] * samples.strides[2]]);
        }
        int32_t o[3] = {0, 0, 0};  // output position over the kSp spatial dims
        const int64_t total = [&] {
          int64_t t = 1;
          for (int d = 0; d < kSp; ++d) t *= out_sz[d];
          return t;
        }();
        for (int64_t flat = 0; flat < total; ++flat) {
          int64_t rem = flat;
          for (int d = kSp - 1; d >= 0; --d) {
            o[d] = static_cast<int32_t>(rem % out_sz[d]);
            rem /= out_sz[d];
          }
          int64_t start[kSp];
          for (int d = 0; d < kSp; ++d) {
            start[d] = interval_start<CT>(uv[d], o[d], in[d], out_sz[d], k[d]);
          }
          CT best = -std::numeric_limits<CT>::infinity();
          int64_t best_i = 0;
          for (int d = 0; d < kSp; ++d) best_i = best_i * in[d] + start[d];
          int64_t w[3] = {0, 0, 0};
          int64_t taps = 1;
          for (int d = 0; d < kSp; ++d) taps *= k[d];
          for (int64_t t = 0; t < taps; ++t) {
            int64_t r = t;
            for (int d = kSp - 1; d >= 0; --d) {
              w[d] = start[d] + r % k[d];
              r /= k[d];
            }
            int64_t off = xo, plane_i = 0;
            for (int d = 0; d < kSp; ++d) {
              off += w[d] * self.strides[lead + d];
              plane_i = plane_i * in[d] + w[d];
            }
            const CT v = convert<CT>(x[off]);
            if (v > best || v != v) {
              best = v;
              best_i = plane_i;
            }
          }
          int64_t yoff = yo, ioff = io;
          for (int d = 0; d < kSp; ++d) {
            yoff += o[d] * output.strides[lead + d];
            ioff += o[d] * indices.strides[lead + d];
          }
          y[yoff] = convert<S>(best);
          ix[ioff] = best_i;
        }
      }
    }
  });
}

}  // namespace

void fractional_max_pool2d_output(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                                  IntSpan output_size, const Tensor& random_samples,
                                  Tensor& output, Tensor& indices) {
  fractional_max_pool<2>(ctx, self, kernel_size, output_size, random_samples, output, indices);
}

void fractional_max_pool3d_output(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                                  IntSpan output_size, const Tensor& random_samples,
                                  Tensor& output, Tensor& indices) {
  fractional_max_pool<3>(ctx, self, kernel_size, output_size, random_samples, output, indices);
}

}  // namespace ember::kernels::portable
