// ember_fused::rms_norm.out(Tensor input, Tensor? weight, float eps, *, Tensor(a!) out)
//     -> Tensor(a!)
//
// RMS normalisation over the last dim, as transformers' decoders write it
// (passes/fuse_rms_norm.py fuses their six ops into this one):
//   out = input · rsqrt(mean(input², -1, keepdim) + eps) · weight
// float32; weight null or [D] (D = input's last dim); any strides (rows with
// a unit-stride last dim take the vector builds, util/rms_norm_f32.h); out
// takes input's shape. Each row is read once for its sum of squares and once
// to scale it; rows split over the pool.
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/rms_norm_f32.h"
#include "kernels/generated/functions/portable/op_rms_norm.h"

namespace ember::kernels::portable {

Error rms_norm_out_prepare(KernelPrepareContext& ctx, const Tensor& input, const Tensor* weight,
                           double eps, Tensor& out) {
  (void)eps;
  EMBER_PREPARE_CHECK(ctx, input.dtype == ScalarType::Float,
                      "input: dtype %s is not supported (float32 only)",
                      scalar_type_name(input.dtype));
  EMBER_PREPARE_CHECK(ctx, out.dtype == ScalarType::Float,
                      "out: dtype %s, must be input's float32", scalar_type_name(out.dtype));
  EMBER_PREPARE_CHECK(ctx, input.dim >= 1, "input must have at least one dim, got a scalar");
  if (weight != nullptr) {
    EMBER_PREPARE_CHECK(ctx, weight->dtype == ScalarType::Float && weight->dim == 1,
                        "weight must be a 1-d float32 tensor, got %s with %d dims",
                        scalar_type_name(weight->dtype), static_cast<int>(weight->dim));
  }
  return Error::Ok;
}

void rms_norm_out(KernelContext& ctx, const Tensor& input, const Tensor* weight, double eps,
                  Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, input.dtype == ScalarType::Float && out.dtype == ScalarType::Float,
                     "input and out must be float32, got %s and %s",
                     scalar_type_name(input.dtype), scalar_type_name(out.dtype));
  EMBER_KERNEL_CHECK(ctx, input.dim >= 1, "input must have at least one dim, got a scalar");
  const int32_t last = input.dim - 1;
  const int64_t n = input.sizes[last];
  if (weight != nullptr) {
    EMBER_KERNEL_CHECK(ctx, weight->dtype == ScalarType::Float && weight->dim == 1 &&
                                weight->sizes[0] == n,
                       "weight must be float32 [%lld] (input's last dim), got %s with %lld "
                       "values", static_cast<long long>(n), scalar_type_name(weight->dtype),
                       static_cast<long long>(weight->numel));
    EMBER_KERNEL_CHECK(ctx, n <= 1 || weight->strides[0] == 1,
                       "weight must be contiguous");
  }
  if (!resize_out(ctx, out, input.shape())) return;
  if (out.numel == 0) return;
  const int64_t rows = out.numel / n;
  const float* x = input.data_ptr<const float>();
  float* y = out.data_ptr<float>();
  const float* w = weight != nullptr ? weight->data_ptr<const float>() : nullptr;
  const auto e = static_cast<float>(eps);
  const int64_t xs = input.strides[last], ys = out.strides[last];
  parallel_range(ctx, rows, kParallelMinCopyElements / n + 1, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      // Row r's offsets: its index over the leading dims, at each tensor's strides.
      int64_t xo = 0, yo = 0, rest = r;
      for (int32_t d = last - 1; d >= 0; --d) {
        const int64_t i = rest % input.sizes[d];
        rest /= input.sizes[d];
        xo += i * input.strides[d];
        yo += i * out.strides[d];
      }
      rms_norm_row_f32(x + xo, xs, n, e, w, y + yo, ys);
    }
  });
}

}  // namespace ember::kernels::portable
