// Quantization parameters of the quantized_decomposed kernels: reading them
// from the arguments, validating them (once at load for what the program
// fixes, cheaply again at run time) and PyTorch's rounding.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::quantized {

/// The value range [lo, hi] of an integer dtype a quantized tensor can have
/// (uint8, int8, int16, int32); false for any other dtype.
bool quant_dtype_range(ScalarType t, int64_t* lo, int64_t* hi);

/// Where an op's quantization parameters sit among its arguments.
struct QParamArgs {
  int scale;       // Double, or a Float/Double tensor (one value, or one per channel)
  int zero_point;  // Int, or an integer tensor; None allowed when `zero_point_optional`
  int quant_min;
  int quant_max;
  int dtype;  // The quantized dtype (a ScalarType number)
  bool zero_point_optional = false;
};

/// Checks the parameters of one call: `dtype` is a quantized integer dtype;
/// quant_min <= quant_max, both within its range; every scale finite and > 0;
/// every zero point within the dtype's range. Tensor parameters are read only
/// where `readable` is null or readable[index] is true (at load, the program's
/// constants). On failure writes a message naming the argument into `msg`
/// and returns false.
bool check_qparams(EValue* const* args, const QParamArgs& layout, const bool* readable,
                   char* msg, size_t msg_size);

/// load_method's check for an op laid out as `kLayout`: refuses invalid
/// parameters with Error::InvalidProgram.
template <const QParamArgs& kLayout>
Error load_check_qparams(EValue* const* args, const bool* constant, size_t num_args) {
  (void)num_args;  // The argument count was checked against the signature.
  char msg[256];
  if (check_qparams(args, kLayout, constant, msg, sizeof(msg))) return Error::Ok;
  return set_error(Error::InvalidProgram, "%s", msg);
}

/// Reads element `i` of a Float or Double tensor as double.
double load_scale(const Tensor& t, int64_t i);

/// Reads element `i` of an integer tensor as int64.
int64_t load_zero_point(const Tensor& t, int64_t i);

/// Reads a per-tensor scale and zero point given as scalars or as
/// one-element tensors (the `.tensor` overloads); false after failing.
bool read_per_tensor_params(KernelContext& ctx, EValue** args, int scale_index,
                            int zero_point_index, double* scale, int64_t* zero_point);

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

}  // namespace ember::kernels::quantized
