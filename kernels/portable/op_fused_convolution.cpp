// ember_fused::fused_convolution.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
//     int[] padding, int[] dilation, int groups, Tensor? residual, float? min, float? max,
//     *, Tensor(a!) out) -> Tensor(a!)
//
// A float32 convolution (not transposed), then + residual, then clamp(min,
// max): what passes/fuse_conv_activation.py makes of convolution → add →
// relu/hardtanh/clamp. The convolution is aten::convolution.out's kernel
// (util/convolution.h); on its GEMM path the residual and the clamp are the
// GEMM's epilogue, done to each output tile while it is in cache, and the
// other paths (Winograd, depthwise) do them in one pass after.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/convolution.h"
#include "kernels/generated/functions/portable/op_fused_convolution.h"

namespace ember::kernels::portable {
namespace {

constexpr int64_t kZeros[3] = {0, 0, 0};

Error check_fused(KernelPrepareContext& ctx, const Tensor& input, const Tensor* residual,
                  std::optional<double> min, std::optional<double> max, const Tensor& out) {
  EMBER_PREPARE_CHECK(ctx, input.dtype == ScalarType::Float,
                      "input: dtype %s is not supported (float32 only)",
                      scalar_type_name(input.dtype));
  EMBER_PREPARE_CHECK(ctx, out.dtype == ScalarType::Float,
                      "out: dtype %s is not the input's float32", scalar_type_name(out.dtype));
  if (residual != nullptr) {
    EMBER_PREPARE_CHECK(ctx, residual->dtype == ScalarType::Float,
                        "residual: dtype %s is not the input's float32",
                        scalar_type_name(residual->dtype));
    EMBER_PREPARE_CHECK(ctx, residual->dim == out.dim,
                        "residual: %d dimensions, the output has %d", residual->dim, out.dim);
  }
  EMBER_PREPARE_CHECK(ctx, !(min && max && *min > *max), "min: %g is greater than max %g",
                      min ? *min : 0.0, max ? *max : 0.0);
  return Error::Ok;
}

}  // namespace

Error fused_convolution_out_prepare(KernelPrepareContext& ctx, const Tensor& input,
                                    const Tensor& weight, const Tensor* bias, IntSpan stride,
                                    IntSpan padding, IntSpan dilation, int64_t groups,
                                    const Tensor* residual, std::optional<double> min,
                                    std::optional<double> max, Tensor& out) {
  if (const Error err = check_fused(ctx, input, residual, min, max, out); err != Error::Ok) {
    return err;
  }
  EMBER_PREPARE_CHECK(ctx, stride.size() <= 3, "stride: %zu values, at most 3", stride.size());
  return convolution_prepare(ctx, input, weight, bias, stride, padding, dilation, false,
                             IntSpan(kZeros, stride.size()), groups, out);
}

void fused_convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                           const Tensor* bias, IntSpan stride, IntSpan padding, IntSpan dilation,
                           int64_t groups, const Tensor* residual, std::optional<double> min,
                           std::optional<double> max, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, stride.size() <= 3, "stride: %zu values, at most 3", stride.size());
  if (residual != nullptr) {
    // The GEMM overwrites out before its epilogue reads the residual.
    EMBER_KERNEL_CHECK(ctx, !tensors_overlap(*residual, out),
                       "residual: its memory overlaps the output's (the memory plan must "
                       "keep them apart)");
  }
  const ConvEpilogue ep{residual, min, max};
  convolution_run(ctx, input, weight, bias, stride, padding, dilation, false,
                  IntSpan(kZeros, stride.size()), groups, &ep, out);
}

}  // namespace ember::kernels::portable
