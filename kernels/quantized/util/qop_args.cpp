#include "kernels/quantized/util/qop_args.h"

#include "kernels/portable/util/args.h"

namespace ember::kernels::quantized {

bool read_qop_tensors(KernelContext& ctx, EValue** args, const QParamArgs& layout, int out_index,
                      Tensor** input, Tensor** out) {
  char msg[256];
  if (!check_qparams(args, layout, nullptr, msg, sizeof(msg))) {
    ctx.fail(Error::InvalidArgument, "%s", msg);
    return false;
  }
  *input = portable::tensor_arg(ctx, args, 0, "input");
  if (*input == nullptr) return false;
  *out = portable::tensor_arg(ctx, args, out_index, "out");
  return *out != nullptr;
}

bool read_channel_qparams(KernelContext& ctx, EValue** args, const QParamArgs& layout,
                          const Tensor& input, ChannelQParams* p) {
  p->scales = portable::tensor_arg(ctx, args, 1, "scales");
  if (p->scales == nullptr) return false;
  if (layout.zero_point_optional) {
    if (!portable::optional_tensor_arg(ctx, args, 2, "zero_points", &p->zero_points)) return false;
  } else {
    p->zero_points = portable::tensor_arg(ctx, args, 2, "zero_points");
    if (p->zero_points == nullptr) return false;
  }
  if (!portable::normalize_dim(ctx, args[3]->as_int, input.dim, "axis", &p->axis)) return false;
  const int64_t channels = input.size(p->axis);
  const int64_t scales = p->scales->numel;
  const int64_t zero_points = p->zero_points != nullptr ? p->zero_points->numel : channels;
  // One value is broadcast to every channel, as in PyTorch.
  if ((scales != channels && scales != 1) || (zero_points != channels && zero_points != 1)) {
    ctx.fail(Error::InvalidArgument,
             "scales (%lld) and zero_points (%lld) need one value per channel of axis %d (%lld), "
             "or one for all",
             static_cast<long long>(scales), static_cast<long long>(zero_points), p->axis,
             static_cast<long long>(channels));
    return false;
  }
  p->scale_step = scales == 1 ? 0 : 1;
  p->zero_point_step = zero_points == 1 ? 0 : 1;
  return true;
}

}  // namespace ember::kernels::quantized
