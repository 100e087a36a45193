// Batch norm:
//   aten::_native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight, Tensor? bias,
//       Tensor running_mean, Tensor running_var, float momentum, float eps, *,
//       Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
//     out1 and out2 come back empty ([0]), as in eager.
//   aten::_native_batch_norm_legit.no_stats_out(Tensor input, Tensor? weight, Tensor? bias,
//       bool training, float momentum, float eps, *, Tensor(a!) out, Tensor(b!) save_mean,
//       Tensor(c!) save_invstd)
//     Batch statistics over N and the spatial dims (biased variance); training must be true.
//
// input is [N, C, *]; the per-channel tensors are [C] and may have another
// floating dtype than input (read once per channel). Any dim orders.
// momentum only matters for updating running statistics, which these
// overloads do not do.
#include <cmath>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/channel_norm.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_batch_norm.h"

namespace ember::kernels::portable {
namespace {

// y = x * scale + shift over every plane of channel c.
template <typename S>
void apply_affine(const Tensor& x, Tensor& y, const PlaneLoop& loop, int64_t c, double scale,
                  double shift) {
  using CT = compute_t<S>;
  for (int64_t n = 0; n < x.sizes[0]; ++n) {
    plane_affine<S>(x, y, loop, n, c, static_cast<CT>(scale), static_cast<CT>(shift));
  }
}

bool check_input(KernelContext& ctx, const Tensor& input, Tensor& out) {
  if (input.dim < 2) {
    ctx.fail(Error::InvalidArgument, "input: expected [N, C, ...], got shape %s",
             ShapeStr(input.shape()).c_str());
    return false;
  }
  if (!is_floating_type(input.dtype)) {
    fail_dtype(ctx, "input", input.dtype);
    return false;
  }
  return check_dtype(ctx, out, "out", input.dtype) && resize_out(ctx, out, input.shape());
}

}  // namespace

void _native_batch_norm_legit_no_training_out(KernelContext& ctx, const Tensor& input,
                                              const Tensor* weight, const Tensor* bias,
                                              const Tensor& running_mean,
                                              const Tensor& running_var, double momentum,
                                              double eps, Tensor& out0, Tensor& out1,
                                              Tensor& out2) {
  (void)momentum;
  if (!check_input(ctx, input, out0)) return;
  const int64_t c = input.sizes[1];
  const Tensor* rmean = &running_mean;
  const Tensor* rvar = &running_var;
  if (!check_channel_tensor(ctx, weight, "weight", c) ||
      !check_channel_tensor(ctx, bias, "bias", c) ||
      !check_channel_tensor(ctx, rmean, "running_mean", c) ||
      !check_channel_tensor(ctx, rvar, "running_var", c)) {
    return;
  }
  const int32_t empty[1] = {0};
  if (!resize_out(ctx, out1, empty) || !resize_out(ctx, out2, empty)) return;
  PlaneLoop loop;
  loop.init(input, out0);
  (void)dispatch_dtype<kFloating>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    // Channels are independent: split them over the pool for large inputs.
    const int64_t per_channel = c > 0 ? input.numel / c : 0;
    const int64_t min_channels = kParallelMinCopyElements / (per_channel + 1) + 1;
    parallel_range(ctx, c, min_channels, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t ch = c0; ch < c1; ++ch) {
        const double inv = 1.0 / std::sqrt(channel_value(rvar, ch, 1.0) + eps);
        const double scale = channel_value(weight, ch, 1.0) * inv;
        const double shift = channel_value(bias, ch, 0.0) - channel_value(rmean, ch, 0.0) * scale;
        apply_affine<S>(input, out0, loop, ch, scale, shift);
      }
    });
  });
}

void _native_batch_norm_legit_no_stats_out(KernelContext& ctx, const Tensor& input,
                                           const Tensor* weight, const Tensor* bias,
                                           bool training, double momentum, double eps,
                                           Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  (void)momentum;
  EMBER_KERNEL_CHECK(ctx, training,
                     "training: must be true without running statistics (there is nothing to "
                     "normalize with)");
  if (!check_input(ctx, input, out)) return;
  const int64_t c = input.sizes[1];
  if (!check_channel_tensor(ctx, weight, "weight", c) ||
      !check_channel_tensor(ctx, bias, "bias", c)) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, is_floating_type(save_mean.dtype) && is_floating_type(save_invstd.dtype),
                     "save_mean/save_invstd: expected floating dtypes, got %s and %s",
                     scalar_type_name(save_mean.dtype), scalar_type_name(save_invstd.dtype));
  const int32_t stat[1] = {static_cast<int32_t>(c)};
  if (!resize_out(ctx, save_mean, stat) || !resize_out(ctx, save_invstd, stat)) return;
  PlaneLoop loop;
  loop.init(input, out);
  const double count = static_cast<double>(input.sizes[0]) * static_cast<double>(loop.hw);
  (void)dispatch_dtype<kFloating>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t ch = 0; ch < c; ++ch) {
      double mean = 0, inv = 0;
      block_moments<S>(input, loop, {0, input.sizes[0], ch, ch + 1}, count, eps, &mean, &inv);
      store_as<double>(save_mean.data, save_mean.dtype, ch * save_mean.strides[0], mean);
      store_as<double>(save_invstd.data, save_invstd.dtype, ch * save_invstd.strides[0], inv);
      const double scale = channel_value(weight, ch, 1.0) * inv;
      const double shift = channel_value(bias, ch, 0.0) - mean * scale;
      apply_affine<S>(input, out, loop, ch, scale, shift);
    }
  });
}

}  // namespace ember::kernels::portable
