// Argument checks shared by the quantized ops: the per-channel parameters of
// quantize_per_channel and dequantize_per_channel (scales, zero points and
// axis, checked against the input), and the float32 input and output of the
// float-in, float-out linear ops.
#pragma once

#include <cstdint>

#include "kernels/quantized/util/qparams.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

/// The per-channel parameters of a `*_per_channel` op. A step is 0 where one
/// value serves every channel (PyTorch broadcasts it), else 1.
struct ChannelQParams {
  const Tensor* scales = nullptr;
  const Tensor* zero_points = nullptr;  // Null for None (dequantize_per_channel).
  int32_t axis = 0;
  int64_t scale_step = 1;
  int64_t zero_point_step = 1;

  /// The zero point of channel c (0 without zero points).
  int64_t zero_point(int64_t c) const {
    return zero_points != nullptr ? load_zero_point(*zero_points, c * zero_point_step) : 0;
  }
};

/// Reads scales, zero_points (null for None) and axis for `input` and checks
/// one value per channel of axis, or one for all. False after failing.
bool read_channel_qparams(KernelContext& ctx, const Tensor& input, const Tensor& scales,
                          const Tensor* zero_points, int64_t axis, ChannelQParams* p);

/// Prepare's check of a float-in, float-out op (the weight-only and dynamic
/// linear ops): input and out float32, else fails with InvalidProgram.
Error check_float_in_out(KernelPrepareContext& ctx, const Tensor& input, const Tensor& out);

}  // namespace ember::kernels::quantized
