// The convolution kernel's entry points with an epilogue, shared by
// aten::convolution.out (op_convolution.cpp, no epilogue) and
// ember_fused::fused_convolution.out (op_fused_convolution.cpp: residual add and
// clamp on each output tile).
#pragma once

#include <optional>

#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// After the convolution and its bias: out += residual (same shape as out,
/// float32, not overlapping it), then out = clamp(out, lo, hi) where a bound
/// is given. The GEMM path does it per tile in cache; the others in one pass.
struct ConvEpilogue {
  const Tensor* residual = nullptr;
  std::optional<double> lo;
  std::optional<double> hi;
};

/// aten::convolution.out's prepare (packs the constant weight).
Error convolution_prepare(KernelPrepareContext& ctx, const Tensor& input, const Tensor& weight,
                          const Tensor* bias, IntSpan stride, IntSpan padding, IntSpan dilation,
                          bool transposed, IntSpan output_padding, int64_t groups, Tensor& out);

/// aten::convolution.out followed by `ep` (null: none).
void convolution_run(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                     const Tensor* bias, IntSpan stride, IntSpan padding, IntSpan dilation,
                     bool transposed, IntSpan output_padding, int64_t groups,
                     const ConvEpilogue* ep, Tensor& out);

}  // namespace ember::kernels::portable
