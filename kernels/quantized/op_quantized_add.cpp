// ember_quantized::add.out(Tensor a, float a_scale, int a_zero_point, Tensor b,
//     float b_scale, int b_zero_point, float output_scale, int output_zero_point,
//     int output_min, int output_max, *, Tensor(a!) out) -> Tensor(a!)
//
// What ember.exir.passes.fuse_quantized_ops makes of pt2e's
//   quantize([relu](add(dequantize(a), dequantize(b))))
// (a residual connection): a and b int8, broadcast to out's shape. Each element
// is eager's float32 y = (a − za)·sa + (b − zb)·sb requantised to out's
// parameters (util/qbinary.h), bit-identical to the unfused chain.
#include "kernels/generated/functions/quantized/op_quantized_add.h"
#include "kernels/quantized/util/qbinary.h"

namespace ember::kernels::quantized {

Error add_out_prepare(KernelPrepareContext& ctx, const Tensor& a, double a_scale,
                      int64_t a_zero_point, const Tensor& b, double b_scale, int64_t b_zero_point,
                      double output_scale, int64_t output_zero_point, int64_t output_min,
                      int64_t output_max, Tensor& out) {
  return qbinary_prepare(ctx, a, b,
                         {a_scale, a_zero_point, b_scale, b_zero_point, output_scale,
                          output_zero_point, output_min, output_max},
                         out);
}

void add_out(KernelContext& ctx, const Tensor& a, double a_scale, int64_t a_zero_point,
             const Tensor& b, double b_scale, int64_t b_zero_point, double output_scale,
             int64_t output_zero_point, int64_t output_min, int64_t output_max, Tensor& out) {
  qbinary_out(ctx, QBinaryOp::kAdd, a, b,
              {a_scale, a_zero_point, b_scale, b_zero_point, output_scale, output_zero_point,
               output_min, output_max},
              out);
}

}  // namespace ember::kernels::quantized
