// quantized_decomposed::choose_qparams.Tensor_out(Tensor input, int quant_min,
//     int quant_max, float eps, ScalarType dtype, *, Tensor(a!) scale_out,
//     Tensor(b!) zero_point_out) -> (Tensor(a!), Tensor(b!))
//
// Per-tensor asymmetric parameters from the input's range, as PyTorch's
// determine_qparams computes them in float32: the range is widened to include
// 0, scale = max((max - min) / (quant_max - quant_min), eps), zero_point =
// clamp(quant_min - round_half_even(min / scale), quant_min, quant_max).
// scale_out is float64 (or float32) [1], zero_point_out int64 (or int32) [1].
// Prepare refuses invalid quant_min, quant_max, eps and dtype (the kernel
// checks them again).
#include <cmath>
#include <cstdio>

#include "kernels/generated/functions/quantized/op_choose_qparams.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/dtype.h"
#include "kernels/quantized/util/qparams.h"

namespace ember::kernels::quantized {
namespace {

using portable::resize_out;

bool check_args(int64_t qmin, int64_t qmax, double eps, int64_t dtype, char* msg, size_t size) {
  int64_t lo = 0, hi = 0;
  if (!quant_dtype_range(static_cast<ScalarType>(dtype), &lo, &hi)) {
    std::snprintf(msg, size, "dtype must be a quantized integer dtype");
    return false;
  }
  // determine_qparams needs a range that contains 0 and is not a single value.
  if (!(qmin <= 0 && 0 <= qmax && qmin < qmax) || qmin < lo || qmax > hi) {
    std::snprintf(msg, size,
                  "[quant_min, quant_max] = [%lld, %lld] must contain 0, be ordered and lie "
                  "within %s's range",
                  static_cast<long long>(qmin), static_cast<long long>(qmax),
                  scalar_type_name(static_cast<ScalarType>(dtype)));
    return false;
  }
  // eps > 0 keeps the scale > 0 (and 1 / scale finite) for a constant input.
  if (!(std::isfinite(eps) && eps > 0.0)) {
    std::snprintf(msg, size, "eps %g must be finite and > 0", eps);
    return false;
  }
  return true;
}

}  // namespace

Error choose_qparams_Tensor_out_prepare(KernelPrepareContext& ctx, const Tensor&,
                                        int64_t quant_min, int64_t quant_max, double eps,
                                        int64_t dtype, Tensor&, Tensor&) {
  char msg[256];
  if (check_args(quant_min, quant_max, eps, dtype, msg, sizeof(msg))) return Error::Ok;
  return ctx.fail(Error::InvalidProgram, "%s", msg);
}

void choose_qparams_Tensor_out(KernelContext& ctx, const Tensor& input, int64_t quant_min,
                               int64_t quant_max, double eps, int64_t dtype, Tensor& scale_out,
                               Tensor& zero_point_out) {
  char msg[256];
  EMBER_KERNEL_CHECK(ctx, check_args(quant_min, quant_max, eps, dtype, msg, sizeof(msg)), "%s",
                     msg);
  EMBER_KERNEL_CHECK(ctx, input.dtype == ScalarType::Float,
                     "input: dtype %s is not supported (float32 only)",
                     scalar_type_name(input.dtype));
  EMBER_KERNEL_CHECK(ctx, input.numel > 0, "input: has no elements to take a range from");
  const ScalarType scale_dtype = scale_out.dtype;
  EMBER_KERNEL_CHECK(ctx, scale_dtype == ScalarType::Double || scale_dtype == ScalarType::Float,
                     "scale_out: dtype %s is not float64 or float32",
                     scalar_type_name(scale_out.dtype));
  EMBER_KERNEL_CHECK(ctx,
                     zero_point_out.dtype == ScalarType::Long ||
                         zero_point_out.dtype == ScalarType::Int,
                     "zero_point_out: dtype %s is not int64 or int32",
                     scalar_type_name(zero_point_out.dtype));
  const int32_t one[1] = {1};
  if (scale_out.dim != 1 || zero_point_out.dim != 1) {
    ctx.fail(Error::InvalidArgument, "scale_out and zero_point_out must be 1-d (one value)");
    return;
  }
  if (!resize_out(ctx, scale_out, one) || !resize_out(ctx, zero_point_out, one)) return;

  // Every element is visited, so the dim order does not matter.
  float scale = 0.0f;
  int64_t zp = 0;
  choose_qparams_f32(input.data_ptr<const float>(), input.numel, quant_min, quant_max, eps,
                     &scale, &zp);
  portable::store_as<double>(scale_out.data, scale_out.dtype, 0, static_cast<double>(scale));
  portable::store_as<int64_t>(zero_point_out.data, zero_point_out.dtype, 0, zp);
}

}  // namespace ember::kernels::quantized
