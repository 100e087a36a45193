// aten::native_group_norm.out(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C,
//     SymInt HxW, int group, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
//
// input is [N, C, *] with HxW spatial positions; out1 = mean and out2 = rstd
// are [N, group] (biased variance, float64 accumulation). weight and bias are
// [C], any floating dtype. Any dim orders.
#include <cmath>

#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/channel_norm.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_group_norm.h"

namespace ember::kernels::portable {

void native_group_norm_out(KernelContext& ctx, const Tensor& input, const Tensor* weight,
                           const Tensor* bias, int64_t N, int64_t C, int64_t HxW, int64_t group,
                           double eps, Tensor& out0, Tensor& out1, Tensor& out2) {
  const int64_t n = N, c = C, hxw = HxW;
  EMBER_KERNEL_CHECK(ctx, input.dim >= 2 && input.sizes[0] == n && input.sizes[1] == c &&
                              input.numel == n * c * hxw,
                     "input: shape %s does not match N=%lld, C=%lld, HxW=%lld",
                     ShapeStr(input.shape()).c_str(), static_cast<long long>(n),
                     static_cast<long long>(c), static_cast<long long>(hxw));
  EMBER_KERNEL_CHECK(ctx, group >= 1 && c % group == 0,
                     "group: %lld does not divide the %lld channels", static_cast<long long>(group),
                     static_cast<long long>(c));
  if (!is_floating_type(input.dtype)) {
    fail_dtype(ctx, "input", input.dtype);
    return;
  }
  if (!check_channel_tensor(ctx, weight, "weight", c) ||
      !check_channel_tensor(ctx, bias, "bias", c)) {
    return;
  }
  if (!check_dtype(ctx, out0, "out0", input.dtype)) return;
  EMBER_KERNEL_CHECK(ctx, is_floating_type(out1.dtype) && is_floating_type(out2.dtype),
                     "out1/out2: expected floating dtypes, got %s and %s",
                     scalar_type_name(out1.dtype), scalar_type_name(out2.dtype));
  const int32_t stat[2] = {static_cast<int32_t>(n), static_cast<int32_t>(group)};
  if (!resize_out(ctx, out0, input.shape()) || !resize_out(ctx, out1, stat) ||
      !resize_out(ctx, out2, stat)) {
    return;
  }
  if (input.numel == 0 && hxw != 0) return;
  const int64_t cg = c / group;
  const double count = static_cast<double>(cg) * static_cast<double>(hxw);
  PlaneLoop loop;
  loop.init(input, out0);
  (void)dispatch_dtype<kFloating>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t g = 0; g < group; ++g) {
        double mean = 0, rstd = 0;
        block_moments<S>(input, loop, {b, b + 1, g * cg, (g + 1) * cg}, count, eps, &mean,
                         &rstd);
        store_as<double>(out1.data, out1.dtype, b * out1.strides[0] + g * out1.strides[1],
                         mean);
        store_as<double>(out2.data, out2.dtype, b * out2.strides[0] + g * out2.strides[1],
                         rstd);
        for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch) {
          const double w = channel_value(weight, ch, 1.0);
          const double bb = channel_value(bias, ch, 0.0);
          const CT scale = static_cast<CT>(rstd * w);
          const CT shift = static_cast<CT>(bb - mean * rstd * w);
          plane_affine<S>(input, out0, loop, b, ch, scale, shift);
        }
      }
    }
  });
}

}  // namespace ember::kernels::portable
