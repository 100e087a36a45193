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
// Prepare refuses invalid parameters the program fixes (numbers, constant
// tensors); the kernel checks them again with the tensors' run-time values.
#include "kernels/generated/functions/quantized/op_dequantize.h"
#include "kernels/portable/util/args.h"
#include "kernels/quantized/util/dispatch.h"
#include "kernels/quantized/util/qop_args.h"
#include "kernels/quantized/util/qparams.h"

namespace ember::kernels::quantized {
namespace {

using portable::fail_dtype;
using portable::resize_out;

// Checks what every variant shares; on success `out` has the input's shape.
bool check_common(KernelContext& ctx, const Tensor& input, const QParams& q,
                  std::optional<int64_t> out_dtype, Tensor& out) {
  if (!run_check_qparams(ctx, q)) return false;
  const auto dtype = static_cast<ScalarType>(q.dtype);
  if (input.dtype != dtype) {
    ctx.fail(Error::InvalidArgument, "input: dtype %s differs from dtype %s",
             scalar_type_name(input.dtype), scalar_type_name(dtype));
    return false;
  }
  if (out_dtype.has_value() && static_cast<ScalarType>(*out_dtype) != out.dtype) {
    ctx.fail(Error::InvalidArgument, "out: dtype %s differs from out_dtype %s",
             scalar_type_name(out.dtype), scalar_type_name(static_cast<ScalarType>(*out_dtype)));
    return false;
  }
  if (out.dtype != ScalarType::Float && out.dtype != ScalarType::Double) {
    fail_dtype(ctx, "out", out.dtype);
    return false;
  }
  return resize_out(ctx, out, input.shape());
}

void dequantize_per_tensor(const Tensor& input, double scale, int64_t zp, Tensor& out) {
  (void)dispatch_dequantize_output(out.dtype, [&](auto out_tag) {
    using F = typename decltype(out_tag)::type;
    const auto s = static_cast<F>(scale);
    const auto z = static_cast<F>(zp);
    (void)dispatch_quant_dtype(input.dtype, [&](auto in_tag) {
      using Q = typename decltype(in_tag)::type;
      map_with_channel<Q, F>(input, out, -1,
                             [&](Q q, int64_t) { return (static_cast<F>(q) - z) * s; });
    });
  });
}

QParams per_tensor_params(double scale, int64_t zero_point, int64_t quant_min, int64_t quant_max,
                          int64_t dtype) {
  return {.scale = scale, .zero_point = zero_point, .quant_min = quant_min,
          .quant_max = quant_max, .dtype = dtype};
}

// zero_point null: None (per channel only).
QParams tensor_params(const Tensor& scale, const Tensor* zero_point, int64_t quant_min,
                      int64_t quant_max, int64_t dtype) {
  return {.scale_tensor = &scale, .zero_point_tensor = zero_point,
          .has_zero_point = zero_point != nullptr, .quant_min = quant_min,
          .quant_max = quant_max, .dtype = dtype};
}

}  // namespace

Error dequantize_per_tensor_out_prepare(KernelPrepareContext& ctx, const Tensor&, double scale,
                                        int64_t zero_point, int64_t quant_min, int64_t quant_max,
                                        int64_t dtype, std::optional<int64_t>, Tensor&) {
  return prepare_qparams(ctx, per_tensor_params(scale, zero_point, quant_min, quant_max, dtype));
}

void dequantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale,
                               int64_t zero_point, int64_t quant_min, int64_t quant_max,
                               int64_t dtype, std::optional<int64_t> out_dtype, Tensor& out) {
  const QParams params = per_tensor_params(scale, zero_point, quant_min, quant_max, dtype);
  if (!check_common(ctx, input, params, out_dtype, out)) return;
  dequantize_per_tensor(input, scale, zero_point, out);
}

Error dequantize_per_tensor_tensor_out_prepare(KernelPrepareContext& ctx, const Tensor&,
                                               const Tensor& scale, const Tensor& zero_point,
                                               int64_t quant_min, int64_t quant_max,
                                               int64_t dtype, std::optional<int64_t>, Tensor&) {
  return prepare_qparams(ctx, tensor_params(scale, &zero_point, quant_min, quant_max, dtype));
}

void dequantize_per_tensor_tensor_out(KernelContext& ctx, const Tensor& input,
                                      const Tensor& scale, const Tensor& zero_point,
                                      int64_t quant_min, int64_t quant_max, int64_t dtype,
                                      std::optional<int64_t> out_dtype, Tensor& out) {
  const QParams params = tensor_params(scale, &zero_point, quant_min, quant_max, dtype);
  if (!check_common(ctx, input, params, out_dtype, out)) return;
  double s = 1.0;
  int64_t zp = 0;
  if (!read_per_tensor_params(ctx, scale, zero_point, &s, &zp)) return;
  dequantize_per_tensor(input, s, zp, out);
}

Error dequantize_per_channel_out_prepare(KernelPrepareContext& ctx, const Tensor&,
                                         const Tensor& scales, const Tensor* zero_points, int64_t,
                                         int64_t quant_min, int64_t quant_max, int64_t dtype,
                                         std::optional<int64_t>, Tensor&) {
  return prepare_qparams(ctx, tensor_params(scales, zero_points, quant_min, quant_max, dtype));
}

void dequantize_per_channel_out(KernelContext& ctx, const Tensor& input, const Tensor& scales,
                                const Tensor* zero_points, int64_t axis, int64_t quant_min,
                                int64_t quant_max, int64_t dtype,
                                std::optional<int64_t> out_dtype, Tensor& out) {
  const QParams params = tensor_params(scales, zero_points, quant_min, quant_max, dtype);
  if (!check_common(ctx, input, params, out_dtype, out)) return;
  ChannelQParams p;
  if (!read_channel_qparams(ctx, input, scales, zero_points, axis, &p)) return;
  dispatch_scale_dtype(scales.dtype, [&](auto ct_tag) {
    using CT = typename decltype(ct_tag)::type;
    const CT* s = scales.data_ptr<const CT>();
    (void)dispatch_dequantize_output(out.dtype, [&](auto out_tag) {
      using F = typename decltype(out_tag)::type;
      (void)dispatch_quant_dtype(input.dtype, [&](auto in_tag) {
        using Q = typename decltype(in_tag)::type;
        map_with_channel<Q, F>(input, out, p.axis, [&](Q q, int64_t c) {
          const int64_t z = p.zero_point(c);
          return static_cast<F>(static_cast<CT>(static_cast<int64_t>(q) - z) * s[c * p.scale_step]);
        });
      });
    });
  });
}

}  // namespace ember::kernels::quantized
