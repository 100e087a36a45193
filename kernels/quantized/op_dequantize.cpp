// quantized_decomposed::dequantize_per_tensor.out(Tensor input, float scale, int zero_point,
//     int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None,
//     Tensor(a!) out) -> Tensor(a!)
// quantized_decomposed::dequantize_per_tensor.tensor_out(... Tensor scale, Tensor zero_point ...)
// quantized_decomposed::dequantize_per_channel.out(Tensor input, Tensor scales,
//     Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *,
//     ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)
//
// out = (input - zero_point) * scale. As PyTorch computes it: per tensor in
// the out dtype ((float)q - (float)zp) * (float)scale; per channel the
// integer difference times the scales in their dtype, then cast to out's.
// input has dtype `dtype` (uint8, int8, int16, int32); out float32 or float64.
#include "kernels/portable/util/args.h"
#include "kernels/quantized/util/dispatch.h"
#include "kernels/quantized/util/qop_args.h"
#include "kernels/quantized/util/qparams.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember::kernels::quantized {
namespace {

using portable::fail_dtype;
using portable::resize_out;

constexpr QParamArgs kPerTensor{1, 2, 3, 4, 5};
constexpr QParamArgs kPerChannel{1, 2, 4, 5, 6, /*zero_point_optional=*/true};

bool prepare(KernelContext& ctx, EValue** args, const QParamArgs& layout, int out_dtype_index,
             Tensor** input, Tensor** out) {
  if (!read_qop_tensors(ctx, args, layout, out_dtype_index + 1, input, out)) return false;
  const auto dtype = static_cast<ScalarType>(args[layout.dtype]->as_int);
  if ((*input)->dtype != dtype) {
    ctx.fail(Error::InvalidArgument, "input: dtype %s differs from dtype %s",
             scalar_type_name((*input)->dtype), scalar_type_name(dtype));
    return false;
  }
  const EValue& out_dtype = *args[out_dtype_index];
  if (out_dtype.is_int() && static_cast<ScalarType>(out_dtype.as_int) != (*out)->dtype) {
    ctx.fail(Error::InvalidArgument, "out: dtype %s differs from out_dtype %s",
             scalar_type_name((*out)->dtype),
             scalar_type_name(static_cast<ScalarType>(out_dtype.as_int)));
    return false;
  }
  if ((*out)->dtype != ScalarType::Float && (*out)->dtype != ScalarType::Double) {
    fail_dtype(ctx, "out", (*out)->dtype);
    return false;
  }
  return resize_out(ctx, **out, (*input)->shape());
}

void dequantize_per_tensor_out(KernelContext& ctx, EValue** args) {
  Tensor *input = nullptr, *out = nullptr;
  if (!prepare(ctx, args, kPerTensor, 6, &input, &out)) return;
  double scale = 1.0;
  int64_t zp = 0;
  if (!read_per_tensor_params(ctx, args, 1, 2, &scale, &zp)) return;
  (void)dispatch_dequantize_output(out->dtype, [&](auto out_tag) {
    using F = typename decltype(out_tag)::type;
    const auto s = static_cast<F>(scale);
    const auto z = static_cast<F>(zp);
    (void)dispatch_quant_dtype(input->dtype, [&](auto in_tag) {
      using Q = typename decltype(in_tag)::type;
      map_with_channel<Q, F>(*input, *out, -1,
                             [&](Q q, int64_t) { return (static_cast<F>(q) - z) * s; });
    });
  });
}

void dequantize_per_channel_out(KernelContext& ctx, EValue** args) {
  Tensor *input = nullptr, *out = nullptr;
  if (!prepare(ctx, args, kPerChannel, 7, &input, &out)) return;
  ChannelQParams p;
  if (!read_channel_qparams(ctx, args, kPerChannel, *input, &p)) return;
  dispatch_scale_dtype(p.scales->dtype, [&](auto ct_tag) {
    using CT = typename decltype(ct_tag)::type;
    const CT* s = p.scales->data_ptr<const CT>();
    (void)dispatch_dequantize_output(out->dtype, [&](auto out_tag) {
      using F = typename decltype(out_tag)::type;
      (void)dispatch_quant_dtype(input->dtype, [&](auto in_tag) {
        using Q = typename decltype(in_tag)::type;
        map_with_channel<Q, F>(*input, *out, p.axis, [&](Q q, int64_t c) {
          const int64_t z = p.zero_point(c);
          return static_cast<F>(static_cast<CT>(static_cast<int64_t>(q) - z) * s[c * p.scale_step]);
        });
      });
    });
  });
}

}  // namespace

EMBER_REGISTER_KERNEL_WITH_CHECK("quantized_decomposed::dequantize_per_tensor.out",
                                 dequantize_per_tensor_out, 9, load_check_qparams<kPerTensor>);
EMBER_REGISTER_KERNEL_WITH_CHECK("quantized_decomposed::dequantize_per_tensor.tensor_out",
                                 dequantize_per_tensor_out, 9, load_check_qparams<kPerTensor>);
EMBER_REGISTER_KERNEL_WITH_CHECK("quantized_decomposed::dequantize_per_channel.out",
                                 dequantize_per_channel_out, 10, load_check_qparams<kPerChannel>);

}  // namespace ember::kernels::quantized
