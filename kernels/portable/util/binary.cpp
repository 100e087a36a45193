#include "kernels/portable/util/binary.h"

namespace ember::kernels::portable {

bool check_supported(KernelContext& ctx, const Tensor& t, const char* name) {
  if (!is_supported_dtype(t.dtype)) {
    fail_dtype(ctx, name, t.dtype);
    return false;
  }
  return true;
}

bool check_can_cast(KernelContext& ctx, ScalarType common, const Tensor& out) {
  if (!can_cast(common, out.dtype)) {
    ctx.fail(Error::InvalidArgument, "out: result dtype %s cannot be cast to out dtype %s",
             scalar_type_name(common), scalar_type_name(out.dtype));
    return false;
  }
  return true;
}

bool prepare_binary(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out,
                    ScalarType common) {
  if (!check_supported(ctx, a, "self") || !check_supported(ctx, b, "other") ||
      !check_supported(ctx, out, "out")) {
    return false;
  }
  int32_t shape[kTensorMaxDim];
  int32_t dim = 0;
  if (!broadcast_shapes(a.shape(), b.shape(), shape, &dim)) {
    ctx.fail(Error::InvalidArgument, "self of shape %s and other of shape %s do not broadcast",
             ShapeStr(a.shape()).c_str(), ShapeStr(b.shape()).c_str());
    return false;
  }
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(dim)})) return false;
  return check_can_cast(ctx, common, out);
}

ScalarType prepare_tensor_scalar(KernelContext& ctx, const Tensor& t, const char* name,
                                 const EValue& scalar, Tensor& out, bool to_float) {
  if (!check_supported(ctx, t, name) || !check_supported(ctx, out, "out")) {
    return kUndefinedDtype;
  }
  ScalarType common = result_type(t, scalar);
  if (to_float && !is_floating_type(common)) common = ScalarType::Float;
  if (!resize_out(ctx, out, t.shape()) || !check_can_cast(ctx, common, out)) {
    return kUndefinedDtype;
  }
  return common;
}

}  // namespace ember::kernels::portable
