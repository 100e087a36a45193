// Quantization parameters of the quantized_decomposed kernels: validating
// them (once at load, in prepare, for what the program fixes; cheaply again at
// run time), reading them from tensors, and PyTorch's rounding.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

/// The value range [lo, hi] of an integer dtype a quantized tensor can have
/// (uint8, int8, int16, int32); false for any other dtype.
bool quant_dtype_range(ScalarType t, int64_t* lo, int64_t* hi);

/// One call's quantization parameters, from the op's typed arguments.
struct QParams {
  // Float/Double, one value or one per channel; null: the number `scale`.
  const Tensor* scale_tensor = nullptr;
  double scale = 1.0;
  const Tensor* zero_point_tensor = nullptr;  // Integer dtype; null: `zero_point`.
  int64_t zero_point = 0;
  bool has_zero_point = true;  // False for a None zero_points (dequantize_per_channel).
  int64_t quant_min = 0;
  int64_t quant_max = 0;
  int64_t dtype = 0;  // The quantized dtype (a ScalarType number).
};

/// Checks the parameters of one call: `dtype` is a quantized integer dtype;
/// quant_min <= quant_max, both within its range; every scale finite and > 0;
/// every zero point within the dtype's range. With `prepare` (at load) the
/// values of a scale or zero point tensor are read only when it is one of the
/// program's constants (nothing else has data yet); without, always. On
/// failure writes a message naming the argument into `msg` and returns false.
bool check_qparams(const QParams& q, const KernelPrepareContext* prepare, char* msg,
                   size_t msg_size);

/// load_method's check (the prepare step of the quantize and dequantize
/// kernels): refuses invalid parameters with Error::InvalidProgram.
Error prepare_qparams(KernelPrepareContext& ctx, const QParams& q);

/// The same check at run time, on every tensor's values: false after
/// failing with InvalidArgument.
bool run_check_qparams(KernelContext& ctx, const QParams& q);

/// Reads element `i` of a Float or Double tensor as double.
double load_scale(const Tensor& t, int64_t i);

/// Reads element `i` of an integer tensor as int64.
int64_t load_zero_point(const Tensor& t, int64_t i);

/// Reads the per-tensor scale and zero point of the `.tensor` overloads
/// (one-element tensors); false after failing.
bool read_per_tensor_params(KernelContext& ctx, const Tensor& scale_t, const Tensor& zero_point_t,
                            double* scale, int64_t* zero_point);

/// True for the dtypes a quantize op reads (PyTorch converts 16-bit floats to float32).
bool is_quantize_input_dtype(ScalarType t);

/// PyTorch's quantization of one value: round(x * inv_scale) half to even,
/// plus the zero point, clamped to [qmin, qmax], all in CT (float32, or double
/// with double per-channel scales). NaN maps to the zero point.
template <typename CT>
inline CT quantize_value(CT x, CT inv_scale, CT zero_point, CT qmin, CT qmax) {
  CT r = std::nearbyint(x * inv_scale) + zero_point;
  if (r != r) return zero_point;
  r = r < qmin ? qmin : r;
  return r > qmax ? qmax : r;
}

/// PyTorch's per-tensor asymmetric parameters of n > 0 float32 values
/// (choose_qparams.tensor), in float32: the range widened to include 0,
/// scale = max((max − min) / (qmax − qmin), eps), zero point = clamp(qmin −
/// round_half_even(min / scale), qmin, qmax).
void choose_qparams_f32(const float* x, int64_t n, int64_t qmin, int64_t qmax, double eps,
                        float* scale, int64_t* zero_point);

/// round_half_even(clamp(v, lo − zp, hi − zp)) + zp for an int8 output: adding
/// and subtracting 1.5·2^23 rounds half to even once |v| < 2^22, which the
/// clamp guarantees (no libm call on baseline x86-64).
inline int8_t requantize(float v, float lo_minus_zp, float hi_minus_zp, int32_t zp) {
  constexpr float kMagic = 12582912.0f;
  v = v < lo_minus_zp ? lo_minus_zp : (v > hi_minus_zp ? hi_minus_zp : v);
  v = (v + kMagic) - kMagic;
  return static_cast<int8_t>(static_cast<int32_t>(v) + zp);
}

/// quantize_value over n contiguous float32 values to int8: requantize of
/// x·inv (NaN maps to the zero point, as quantize_value does). AVX-512 where
/// cpu_isa() allows it (the same bits), else a loop the compiler vectorises
/// (every quantized model's activations go through it).
void quantize_f32_s8(const float* __restrict x, int8_t* __restrict o, int64_t n, float inv,
                     float lo_minus_zp, float hi_minus_zp, int32_t zp);

}  // namespace ember::kernels::quantized
