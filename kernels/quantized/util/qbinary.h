// The elementwise int8 ops with a requantised result (ember_quantized::add
// and ::mul): what ember.exir.passes.fuse_quantized_ops makes of pt2e's
//   quantize([relu](op(dequantize(a), dequantize(b))))
// Each element is computed with eager's float32 operations in eager's order,
//   y = op((a − za)·sa, (b − zb)·sb),  out = clamp(round_half_even(y · (1/sy)) + zy, lo, hi),
// so the result has the unfused chain's bits; the op reads two int8 tensors
// and writes one instead of going through three float32 ones. a and b
// broadcast (NumPy rules) to out's shape, in any dim order.
#pragma once

#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

enum class QBinaryOp : uint8_t { kAdd, kMul };

/// The quantization arguments of one call, as the kernels take them.
struct QBinaryArgs {
  double a_scale;
  int64_t a_zero_point;
  double b_scale;
  int64_t b_zero_point;
  double output_scale;
  int64_t output_zero_point;
  int64_t output_min;
  int64_t output_max;
};

/// Prepare's checks: int8 operands and result, finite scales > 0, zero
/// points and the output range within int8 (InvalidProgram naming the
/// argument otherwise).
Error qbinary_prepare(KernelPrepareContext& ctx, const Tensor& a, const Tensor& b,
                      const QBinaryArgs& q, Tensor& out);

/// out = requantize(op(dequantize(a), dequantize(b))), broadcast; fails on
/// ctx with a message naming what is wrong (dtype, shapes that do not
/// broadcast, out's size).
void qbinary_out(KernelContext& ctx, QBinaryOp op, const Tensor& a, const Tensor& b,
                 const QBinaryArgs& q, Tensor& out);

/// The span behind qbinary_out, for tests: n elements of a and b, or of a
/// and the single value b[0] when `b_scalar`, at the ISA level cpu_isa() allows.
void qbinary_span(QBinaryOp op, const int8_t* a, const int8_t* b, bool b_scalar, int8_t* out,
                  int64_t n, const QBinaryArgs& q);

}  // namespace ember::kernels::quantized
