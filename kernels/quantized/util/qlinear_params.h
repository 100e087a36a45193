// What the fused quantized ops (op_quantized_linear.cpp, op_quantized_conv2d.cpp)
// share at prepare: checking their quantization arguments and computing the
// per-output-channel requantisation factors once.
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

/// Per-output-channel factors of the epilogue (QEpilogue): with a static
/// output, scale[c] = input_scale · weight_scales[c] / output_scale and
/// offset[c] = bias[c] / output_scale; with a float output (dynamic
/// quantization), scale[c] = weight_scales[c] and offset[c] = bias[c].
struct QChannelFactors {
  float* scale = nullptr;
  float* offset = nullptr;  // Null without a bias.
};

/// Checks `weight` (int8, a constant, contiguous, `dims` dimensions),
/// `weight_scales` (float32 constant with weight.sizes[0] finite values > 0)
/// and `bias` (null or a float32 constant with weight.sizes[0] values), then
/// allocates and fills the factors. `input_scale` / `output_scale` are 1 for
/// a float output. Fails with InvalidProgram naming the argument.
Error prepare_channel_factors(KernelPrepareContext& ctx, const Tensor& weight,
                              int dims, const Tensor& weight_scales, const Tensor* bias,
                              double input_scale, double output_scale, QChannelFactors* out);

/// Checks a static op's int8 operand and result and its quantization
/// arguments: `input` (named `input_name` in the message, the refusal the dtype
/// probe reads) and `out` are int8, scales finite and > 0, zero points and
/// [output_min, output_max] within int8's range.
Error check_static_qargs(KernelPrepareContext& ctx, const Tensor& input, const char* input_name,
                         double input_scale, int64_t input_zero_point, const Tensor& out,
                         double output_scale, int64_t output_zero_point, int64_t output_min,
                         int64_t output_max);

}  // namespace ember::kernels::quantized
