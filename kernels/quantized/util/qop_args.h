// Argument handling shared by quantize and dequantize: both validate their
// quantization parameters, read input and out, and (per channel) read the
// scales, zero points and axis in the same way.
#pragma once

#include <cstdint>

#include "kernels/quantized/util/qparams.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

/// Checks the call's quantization parameters (laid out as `layout`) and reads
/// `input` (args[0]) and `out` (args[out_index]). False after failing.
bool read_qop_tensors(KernelContext& ctx, EValue** args, const QParamArgs& layout, int out_index,
                      Tensor** input, Tensor** out);

/// The per-channel parameters of a `*_per_channel` op. A step is 0 where one
/// value serves every channel (PyTorch broadcasts it), else 1.
struct ChannelQParams {
  Tensor* scales = nullptr;
  Tensor* zero_points = nullptr;  // Null for None (when the layout allows it).
  int32_t axis = 0;
  int64_t scale_step = 1;
  int64_t zero_point_step = 1;

  /// The zero point of channel c (0 without zero points).
  int64_t zero_point(int64_t c) const {
    return zero_points != nullptr ? load_zero_point(*zero_points, c * zero_point_step) : 0;
  }
};

/// Reads scales (args[1]), zero_points (args[2]) and axis (args[3]) for
/// `input` and checks one value per channel of axis, or one for all. False
/// after failing.
bool read_channel_qparams(KernelContext& ctx, EValue** args, const QParamArgs& layout,
                          const Tensor& input, ChannelQParams* p);

}  // namespace ember::kernels::quantized
