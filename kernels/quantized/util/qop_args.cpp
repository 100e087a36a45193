#include "kernels/quantized/util/qop_args.h"

#include "kernels/portable/util/args.h"

namespace ember::kernels::quantized {

bool read_channel_qparams(KernelContext& ctx, const Tensor& input, const Tensor& scales,
                          const Tensor* zero_points, int64_t axis, ChannelQParams* p) {
  p->scales = &scales;
  p->zero_points = zero_points;
  if (!portable::normalize_dim(ctx, axis, input.dim, "axis", &p->axis)) return false;
  const int64_t channels = input.size(p->axis);
  const int64_t n_scales = scales.numel;
  const int64_t n_zero_points = zero_points != nullptr ? zero_points->numel : channels;
  // One value is broadcast to every channel, as in PyTorch.
  if ((n_scales != channels && n_scales != 1) ||
      (n_zero_points != channels && n_zero_points != 1)) {
    ctx.fail(Error::InvalidArgument,
             "scales (%lld) and zero_points (%lld) need one value per channel of axis %d (%lld), "
             "or one for all",
             static_cast<long long>(n_scales), static_cast<long long>(n_zero_points), p->axis,
             static_cast<long long>(channels));
    return false;
  }
  p->scale_step = n_scales == 1 ? 0 : 1;
  p->zero_point_step = n_zero_points == 1 ? 0 : 1;
  return true;
}

Error check_float_in_out(KernelPrepareContext& ctx, const Tensor& input, const Tensor& out) {
  if (input.dtype != ScalarType::Float) {
    return ctx.fail(Error::InvalidProgram, "input: dtype %s is not supported (float32 only)",
                    scalar_type_name(input.dtype));
  }
  if (out.dtype != ScalarType::Float) {
    return ctx.fail(Error::InvalidProgram, "out must be float32, got %s",
                    scalar_type_name(out.dtype));
  }
  return Error::Ok;
}

}  // namespace ember::kernels::quantized
