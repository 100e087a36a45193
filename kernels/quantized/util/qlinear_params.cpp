#include "kernels/quantized/util/qlinear_params.h"

#include <cmath>

namespace ember::kernels::quantized {

namespace {

bool scale_ok(double s) { return std::isfinite(s) && s > 0.0; }
bool int8_ok(int64_t v) { return v >= -128 && v <= 127; }

}  // namespace

Error check_static_qargs(KernelPrepareContext& ctx, const Tensor& input, const char* input_name,
                         double input_scale, int64_t input_zero_point, const Tensor& out,
                         double output_scale, int64_t output_zero_point, int64_t output_min,
                         int64_t output_max) {
  if (input.dtype != ScalarType::Char) {
    return ctx.fail(Error::InvalidProgram, "%s: dtype %s is not supported (int8 only)",
                    input_name, scalar_type_name(input.dtype));
  }
  if (out.dtype != ScalarType::Char) {
    return ctx.fail(Error::InvalidProgram, "out must be int8, got %s",
                    scalar_type_name(out.dtype));
  }
  if (!scale_ok(input_scale) || !scale_ok(output_scale)) {
    return ctx.fail(Error::InvalidProgram, "input_scale %g and output_scale %g must be finite "
                    "and > 0", input_scale, output_scale);
  }
  if (!int8_ok(input_zero_point) || !int8_ok(output_zero_point)) {
    return ctx.fail(Error::InvalidProgram, "zero points %lld and %lld must lie in int8's "
                    "range [-128, 127]", static_cast<long long>(input_zero_point),
                    static_cast<long long>(output_zero_point));
  }
  if (!int8_ok(output_min) || !int8_ok(output_max) || output_min > output_max) {
    return ctx.fail(Error::InvalidProgram, "[output_min, output_max] = [%lld, %lld] must be "
                    "ordered and lie in int8's range", static_cast<long long>(output_min),
                    static_cast<long long>(output_max));
  }
  return Error::Ok;
}

Error prepare_channel_factors(KernelPrepareContext& ctx, const Tensor& weight,
                              int dims, const Tensor& weight_scales, const Tensor* bias,
                              double input_scale, double output_scale, QChannelFactors* out) {
  if (weight.dtype != ScalarType::Char || weight.dim != dims) {
    return ctx.fail(Error::InvalidProgram, "weight must be a %d-d int8 tensor, got %d-d %s",
                    dims, static_cast<int>(weight.dim), scalar_type_name(weight.dtype));
  }
  if (!ctx.is_constant(weight) || weight.data == nullptr || !weight.is_contiguous_dim_order()) {
    return ctx.fail(Error::InvalidProgram,
                    "weight must be a contiguous constant of the program (it is packed at "
                    "load)");
  }
  const int64_t channels = weight.sizes[0];
  if (weight_scales.dtype != ScalarType::Float || weight_scales.numel != channels ||
      !ctx.is_constant(weight_scales) || weight_scales.data == nullptr) {
    return ctx.fail(Error::InvalidProgram,
                    "weight_scales must be a float32 constant with %lld values (one per "
                    "output channel), got %s with %lld", static_cast<long long>(channels),
                    scalar_type_name(weight_scales.dtype),
                    static_cast<long long>(weight_scales.numel));
  }
  if (bias != nullptr && (bias->dtype != ScalarType::Float || bias->numel != channels ||
                          !ctx.is_constant(*bias) || bias->data == nullptr)) {
    return ctx.fail(Error::InvalidProgram,
                    "bias must be a float32 constant with %lld values, got %s with %lld",
                    static_cast<long long>(channels), scalar_type_name(bias->dtype),
                    static_cast<long long>(bias->numel));
  }
  out->scale = static_cast<float*>(ctx.allocate(static_cast<size_t>(channels) * sizeof(float)));
  if (out->scale == nullptr) return ctx.failure();
  const float* ws = weight_scales.data_ptr<const float>();
  for (int64_t c = 0; c < channels; ++c) {
    if (!scale_ok(ws[c])) {
      return ctx.fail(Error::InvalidProgram, "weight_scales[%lld] = %g must be finite and > 0",
                      static_cast<long long>(c), static_cast<double>(ws[c]));
    }
    out->scale[c] = static_cast<float>(input_scale * static_cast<double>(ws[c]) / output_scale);
  }
  out->offset = nullptr;
  if (bias != nullptr) {
    out->offset = static_cast<float*>(ctx.allocate(static_cast<size_t>(channels) * sizeof(float)));
    if (out->offset == nullptr) return ctx.failure();
    const float* b = bias->data_ptr<const float>();
    for (int64_t c = 0; c < channels; ++c) {
      out->offset[c] = static_cast<float>(static_cast<double>(b[c]) / output_scale);
    }
  }
  return Error::Ok;
}

}  // namespace ember::kernels::quantized
