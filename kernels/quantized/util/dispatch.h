// Dtype dispatch and strided loops for the quantize/dequantize kernels.
#pragma once

#include <cstdint>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/dtype.h"
#include "runtime/core/tensor.h"

namespace ember::kernels::quantized {

using portable::BFloat16;
using portable::Half;
using portable::TypeTag;

/// Calls f(TypeTag<Q>{}) for a quantized integer dtype (uint8, int8, int16,
/// int32); false for any other.
template <typename F>
[[nodiscard]] bool dispatch_quant_dtype(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Byte: f(TypeTag<uint8_t>{}); return true;
    case ScalarType::Char: f(TypeTag<int8_t>{}); return true;
    case ScalarType::Short: f(TypeTag<int16_t>{}); return true;
    case ScalarType::Int: f(TypeTag<int32_t>{}); return true;
    default: return false;
  }
}

/// Calls f(TypeTag<T>{}) for the float dtypes a quantize op reads.
template <typename F>
[[nodiscard]] bool dispatch_quantize_input(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Float: f(TypeTag<float>{}); return true;
    case ScalarType::Half: f(TypeTag<Half>{}); return true;
    case ScalarType::BFloat16: f(TypeTag<BFloat16>{}); return true;
    default: return false;
  }
}

/// Calls f(TypeTag<T>{}) for the float dtypes a dequantize op writes.
template <typename F>
[[nodiscard]] bool dispatch_dequantize_output(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Float: f(TypeTag<float>{}); return true;
    case ScalarType::Double: f(TypeTag<double>{}); return true;
    default: return false;
  }
}

/// Calls f(TypeTag<double>{}) for float64 per-channel scales, else
/// f(TypeTag<float>{}): PyTorch computes per channel in the scales' dtype.
template <typename F>
void dispatch_scale_dtype(ScalarType t, F&& f) {
  if (t == ScalarType::Double) {
    f(TypeTag<double>{});
  } else {
    f(TypeTag<float>{});
  }
}

/// out[i] = f(in[i], channel(i)) over `out`'s shape (any dim orders), where
/// channel(i) is the index along `axis` (always 0 when axis < 0).
template <typename In, typename Out, typename F>
void map_with_channel(const Tensor& in, Tensor& out, int32_t axis, F f) {
  int64_t channel_strides[kTensorMaxDim] = {};
  if (axis >= 0) channel_strides[axis] = 1;
  const int64_t* strides[3] = {out.strides, in.strides, channel_strides};
  portable::StridedLoop<3> loop;
  loop.init(out.shape(), strides);
  Out* const o = out.data_ptr<Out>();
  const In* const a = in.data_ptr<const In>();
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    Out* po = o + off[0];
    const In* pa = a + off[1];
    if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      const int64_t c = off[2];
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], c);
    } else {
      for (int64_t i = 0; i < n; ++i) po[i * st[0]] = f(pa[i * st[1]], off[2] + i * st[2]);
    }
  });
}

}  // namespace ember::kernels::quantized
