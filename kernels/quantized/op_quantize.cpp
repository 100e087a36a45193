// quantized_decomposed::quantize_per_tensor.out(Tensor input, float scale, int zero_point,
//     int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)
// quantized_decomposed::quantize_per_tensor.tensor_out(Tensor input, Tensor scale,
//     Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
// quantized_decomposed::quantize_per_channel.out(Tensor input, Tensor scales,
//     Tensor zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *,
//     Tensor(a!) out) -> Tensor(a!)
//
// out = clamp(round_half_even(input * (1 / scale)) + zero_point, quant_min, quant_max),
// computed as PyTorch does: in float32, except per channel with float64
// scales (then in float64). Input float32 (16-bit floats are widened).
// Prepare refuses invalid parameters the program fixes (numbers, constant
// tensors); the kernel checks them again with the tensors' run-time values.
#include "kernels/generated/functions/quantized/op_quantize.h"
#include "kernels/portable/util/args.h"
#include "kernels/quantized/util/dispatch.h"
#include "kernels/quantized/util/qop_args.h"
#include "kernels/quantized/util/qparams.h"

namespace ember::kernels::quantized {
namespace {

using portable::convert;
using portable::fail_dtype;
using portable::resize_out;

// Checks what every variant shares; on success `out` has the input's shape.
bool check_common(KernelContext& ctx, const Tensor& input, const QParams& q, Tensor& out) {
  if (!run_check_qparams(ctx, q)) return false;
  const auto dtype = static_cast<ScalarType>(q.dtype);
  if (out.dtype != dtype) {
    ctx.fail(Error::InvalidArgument, "out: dtype %s differs from dtype %s",
             scalar_type_name(out.dtype), scalar_type_name(dtype));
    return false;
  }
  if (!is_quantize_input_dtype(input.dtype)) {
    fail_dtype(ctx, "input", input.dtype);
    return false;
  }
  return resize_out(ctx, out, input.shape());
}

bool same_dim_order(const Tensor& a, const Tensor& b) {
  if (a.dim != b.dim) return false;
  for (int i = 0; i < a.dim; ++i) {
    if (a.dim_order[i] != b.dim_order[i]) return false;
  }
  return true;
}

void quantize_per_tensor(KernelContext& ctx, const Tensor& input, double scale, int64_t zp,
                         const QParams& q, Tensor& out) {
  // PyTorch multiplies a float32 tensor by the Python float 1/scale in float32.
  const auto inv = static_cast<float>(1.0 / scale);
  const auto z = static_cast<float>(zp);
  const auto qmin = static_cast<float>(q.quant_min);
  const auto qmax = static_cast<float>(q.quant_max);
  if (input.dtype == ScalarType::Float && out.dtype == ScalarType::Char &&
      same_dim_order(input, out)) {
    quantize_f32_s8(input.data_ptr<const float>(), out.data_ptr<int8_t>(), input.numel, inv,
                    qmin - z, qmax - z, static_cast<int32_t>(zp));
    return;
  }
  const bool ok = dispatch_quantize_input(input.dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    (void)dispatch_quant_dtype(out.dtype, [&](auto out_tag) {
      using Q = typename decltype(out_tag)::type;
      map_with_channel<In, Q>(input, out, -1, [&](In x, int64_t) {
        return static_cast<Q>(quantize_value(convert<float>(x), inv, z, qmin, qmax));
      });
    });
  });
  if (!ok) fail_dtype(ctx, "input", input.dtype);
}

QParams per_tensor_params(double scale, int64_t zero_point, int64_t quant_min, int64_t quant_max,
                          int64_t dtype) {
  return {.scale = scale, .zero_point = zero_point, .quant_min = quant_min,
          .quant_max = quant_max, .dtype = dtype};
}

QParams tensor_params(const Tensor& scale, const Tensor& zero_point, int64_t quant_min,
                      int64_t quant_max, int64_t dtype) {
  return {.scale_tensor = &scale, .zero_point_tensor = &zero_point, .quant_min = quant_min,
          .quant_max = quant_max, .dtype = dtype};
}

}  // namespace

Error quantize_per_tensor_out_prepare(KernelPrepareContext& ctx, const Tensor&, double scale,
                                      int64_t zero_point, int64_t quant_min, int64_t quant_max,
                                      int64_t dtype, Tensor&) {
  return prepare_qparams(ctx, per_tensor_params(scale, zero_point, quant_min, quant_max, dtype));
}

void quantize_per_tensor_out(KernelContext& ctx, const Tensor& input, double scale,
                             int64_t zero_point, int64_t quant_min, int64_t quant_max,
                             int64_t dtype, Tensor& out) {
  const QParams params = per_tensor_params(scale, zero_point, quant_min, quant_max, dtype);
  if (!check_common(ctx, input, params, out)) return;
  quantize_per_tensor(ctx, input, scale, zero_point, params, out);
}

Error quantize_per_tensor_tensor_out_prepare(KernelPrepareContext& ctx, const Tensor&,
                                             const Tensor& scale, const Tensor& zero_point,
                                             int64_t quant_min, int64_t quant_max, int64_t dtype,
                                             Tensor&) {
  return prepare_qparams(ctx, tensor_params(scale, zero_point, quant_min, quant_max, dtype));
}

void quantize_per_tensor_tensor_out(KernelContext& ctx, const Tensor& input, const Tensor& scale,
                                    const Tensor& zero_point, int64_t quant_min,
                                    int64_t quant_max, int64_t dtype, Tensor& out) {
  const QParams params = tensor_params(scale, zero_point, quant_min, quant_max, dtype);
  if (!check_common(ctx, input, params, out)) return;
  double s = 1.0;
  int64_t zp = 0;
  if (!read_per_tensor_params(ctx, scale, zero_point, &s, &zp)) return;
  quantize_per_tensor(ctx, input, s, zp, params, out);
}

Error quantize_per_channel_out_prepare(KernelPrepareContext& ctx, const Tensor&,
                                       const Tensor& scales, const Tensor& zero_points, int64_t,
                                       int64_t quant_min, int64_t quant_max, int64_t dtype,
                                       Tensor&) {
  return prepare_qparams(ctx, tensor_params(scales, zero_points, quant_min, quant_max, dtype));
}

void quantize_per_channel_out(KernelContext& ctx, const Tensor& input, const Tensor& scales,
                              const Tensor& zero_points, int64_t axis, int64_t quant_min,
                              int64_t quant_max, int64_t dtype, Tensor& out) {
  const QParams params = tensor_params(scales, zero_points, quant_min, quant_max, dtype);
  if (!check_common(ctx, input, params, out)) return;
  ChannelQParams p;
  if (!read_channel_qparams(ctx, input, scales, &zero_points, axis, &p)) return;
  dispatch_scale_dtype(scales.dtype, [&](auto ct_tag) {
    using CT = typename decltype(ct_tag)::type;
    const auto qmin = static_cast<CT>(quant_min);
    const auto qmax = static_cast<CT>(quant_max);
    (void)dispatch_quantize_input(input.dtype, [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      (void)dispatch_quant_dtype(out.dtype, [&](auto out_tag) {
        using Q = typename decltype(out_tag)::type;
        const CT* s = scales.data_ptr<const CT>();
        map_with_channel<In, Q>(input, out, p.axis, [&](In x, int64_t c) {
          // 1 / scales is a tensor op in the scales' dtype; so is the product.
          const CT inv = CT(1) / s[c * p.scale_step];
          const auto z = static_cast<CT>(p.zero_point(c));
          return static_cast<Q>(quantize_value(convert<CT>(convert<float>(x)), inv, z, qmin, qmax));
        });
      });
    });
  });
}

}  // namespace ember::kernels::quantized
