"""Ember's fused quantized ops (``ember_quantized::``), with their out variants.

``ember.exir.passes.fuse_quantized_ops`` rewrites pt2e's
dequantize → linear/convolution → [relu] → quantize chains into these; the
runtime's kernels (``kernels/quantized/op_quantized_*.cpp``) compute them in
integers. The eager implementations here are the reference: they compute what
the unfused chain computes (dequantize, the float op, quantize), so a program
with fused ops means exactly what the one without meant.

- ``linear(input int8 [..., K], input_scale, input_zero_point, weight int8
  [N, K], weight_scales float32 [N], bias float32 [N]?, output_scale,
  output_zero_point, output_min, output_max) -> int8 [..., N]``
- ``conv2d(input int8 NCHW, ..., weight int8 [C_out, C_in/groups, kh, kw],
  ..., stride, padding, dilation, groups, ...) -> int8 NCHW``; ``padding`` has
  1, 2 or 4 values (``[top, left, bottom, right]``: TF-style asymmetric padding
  folded in); padding reads the input's zero point (dequantized: 0)
- ``add(a int8, a_scale, a_zero_point, b int8, b_scale, b_zero_point,
  output_scale, output_zero_point, output_min, output_max) -> int8``: a and b
  broadcast; ``mul`` takes the same arguments
- ``linear_dynamic(input float32 [..., K], weight, weight_scales, bias?,
  quant_min, quant_max, eps) -> float32 [..., N]``: the input quantized per
  tensor with parameters chosen at run time (``choose_qparams.tensor``).

- ``linear_weight_only(input float32 [..., K], weight, scales float32
  [N, K / group_size], zero_points float32 [N, K / group_size]?, group_size,
  bias?) -> float32 [..., N]``: torchao's weight-only flows (int8 per channel,
  int4/int8 per group); the weight is ``(weight - zero_points) * scales`` per
  group. ``weight`` is int8 [N, K], or int4 two per byte, uint8 [N, K / 2]
  (``pack_int4``'s layout, below).
- ``linear_dynamic_intx(input float32 [..., K], weight, weight_scales float32
  [N, K / group_size], group_size, weight_bits, bias?) -> float32 [..., N]``:
  torchao's Int8DynamicActivationIntxWeightConfig (8da4w, 8da8w). Each row of
  the input is quantized to int8 with its own scale and zero point (torchao's
  asymmetric per-token choose_qparams_affine / quantize_affine); the weight is
  symmetric, int8 [N, K] (weight_bits 8) or int4 two per byte, uint8 [N, K / 2]
  (weight_bits 4: ``w[n, 2j] + 8`` in byte j's low nibble, ``w[n, 2j + 1] + 8``
  in its high nibble; ``pack_int4`` / ``unpack_int4``).

Weights of the others are symmetric (zero point 0), one scale per output channel; a fused
relu or hardtanh is the output's clamp range [output_min, output_max].
"""

from __future__ import annotations

import torch
from torch.ao.quantization.fx import _decomposed  # noqa: F401  (defines quantized_decomposed)

from ember.exir.operator.library import define_ops

_qd = torch.ops.quantized_decomposed

_LINEAR = (
    "Tensor input, float input_scale, int input_zero_point, Tensor weight, Tensor weight_scales, "
    "Tensor? bias, float output_scale, int output_zero_point, int output_min, int output_max"
)
_CONV = (
    "Tensor input, float input_scale, int input_zero_point, Tensor weight, Tensor weight_scales, "
    "Tensor? bias, int[] stride, int[] padding, int[] dilation, int groups, float output_scale, "
    "int output_zero_point, int output_min, int output_max"
)
_DYNAMIC = (
    "Tensor input, Tensor weight, Tensor weight_scales, Tensor? bias, int quant_min, "
    "int quant_max, float eps"
)
_ADD = (
    "Tensor a, float a_scale, int a_zero_point, Tensor b, float b_scale, int b_zero_point, "
    "float output_scale, int output_zero_point, int output_min, int output_max"
)
_WEIGHT_ONLY = (
    "Tensor input, Tensor weight, Tensor scales, Tensor? zero_points, int group_size, Tensor? bias"
)
_DYNAMIC_INTX = (
    "Tensor input, Tensor weight, Tensor weight_scales, int group_size, int weight_bits, "
    "Tensor? bias"
)
_OUT = "*, Tensor(a!) out) -> Tensor(a!)"

SCHEMAS = {
    "linear": f"({_LINEAR}) -> Tensor",
    "linear.out": f"({_LINEAR}, {_OUT}",
    "conv2d": f"({_CONV}) -> Tensor",
    "conv2d.out": f"({_CONV}, {_OUT}",
    "linear_dynamic": f"({_DYNAMIC}) -> Tensor",
    "linear_dynamic.out": f"({_DYNAMIC}, {_OUT}",
    "add": f"({_ADD}) -> Tensor",
    "linear_weight_only": f"({_WEIGHT_ONLY}) -> Tensor",
    "linear_weight_only.out": f"({_WEIGHT_ONLY}, {_OUT}",
    "add.out": f"({_ADD}, {_OUT}",
    "mul": f"({_ADD}) -> Tensor",
    "mul.out": f"({_ADD}, {_OUT}",
    "linear_dynamic_intx": f"({_DYNAMIC_INTX}) -> Tensor",
    "linear_dynamic_intx.out": f"({_DYNAMIC_INTX}, {_OUT}",
}


def _dequantized_weight(weight: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    zeros = torch.zeros(scales.shape, dtype=torch.int64)
    return _qd.dequantize_per_channel(weight, scales, zeros, 0, -128, 127, torch.int8)


def _requantize(y: torch.Tensor, scale: float, zero_point: int, lo: int, hi: int) -> torch.Tensor:
    return _qd.quantize_per_tensor(y, scale, zero_point, lo, hi, torch.int8)


def linear(input, input_scale, input_zero_point, weight, weight_scales, bias, output_scale,
           output_zero_point, output_min, output_max):
    x = _qd.dequantize_per_tensor(input, input_scale, input_zero_point, -128, 127, torch.int8)
    y = torch.nn.functional.linear(x, _dequantized_weight(weight, weight_scales), bias)
    return _requantize(y, output_scale, output_zero_point, output_min, output_max)


def conv2d(input, input_scale, input_zero_point, weight, weight_scales, bias, stride, padding,
           dilation, groups, output_scale, output_zero_point, output_min, output_max):
    x = _qd.dequantize_per_tensor(input, input_scale, input_zero_point, -128, 127, torch.int8)
    if len(padding) == 4:  # [top, left, bottom, right]
        top, left, bottom, right = padding
        x = torch.nn.functional.pad(x, (left, right, top, bottom))
        padding = [0, 0]
    y = torch.nn.functional.conv2d(x, _dequantized_weight(weight, weight_scales), bias, stride,
                                   padding, dilation, groups)
    return _requantize(y, output_scale, output_zero_point, output_min, output_max)


def linear_dynamic(input, weight, weight_scales, bias, quant_min, quant_max, eps):
    scale, zero_point = _qd.choose_qparams.tensor(input, quant_min, quant_max, eps, torch.int8)
    q = _qd.quantize_per_tensor.tensor(input, scale, zero_point, quant_min, quant_max,
                                       torch.int8)
    x = _qd.dequantize_per_tensor.tensor(q, scale, zero_point, quant_min, quant_max, torch.int8)
    return torch.nn.functional.linear(x, _dequantized_weight(weight, weight_scales), bias)


def add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
        output_min, output_max):
    fa = _qd.dequantize_per_tensor(a, a_scale, a_zero_point, -128, 127, torch.int8)
    fb = _qd.dequantize_per_tensor(b, b_scale, b_zero_point, -128, 127, torch.int8)
    return _requantize(fa + fb, output_scale, output_zero_point, output_min, output_max)


def mul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
        output_min, output_max):
    fa = _qd.dequantize_per_tensor(a, a_scale, a_zero_point, -128, 127, torch.int8)
    fb = _qd.dequantize_per_tensor(b, b_scale, b_zero_point, -128, 127, torch.int8)
    return _requantize(fa * fb, output_scale, output_zero_point, output_min, output_max)


def linear_weight_only(input, weight, scales, zero_points, group_size, bias):
    if weight.dtype == torch.uint8:
        weight = unpack_int4(weight)
    n, k = weight.shape
    w = weight.to(torch.float32).reshape(n, k // group_size, group_size)
    if zero_points is not None:
        w = w - zero_points.reshape(n, -1, 1)
    w = (w * scales.reshape(n, -1, 1)).reshape(n, k)
    return torch.nn.functional.linear(input, w, bias)


def pack_int4(w: torch.Tensor) -> torch.Tensor:
    """int4 values (int8 [N, K] in [-8, 7], K even) two per byte: uint8 [N, K / 2]."""
    v = (w.to(torch.int16) + 8).to(torch.uint8)
    return v[:, 0::2] | (v[:, 1::2] << 4)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """``pack_int4``'s inverse: int8 [N, 2 * packed.shape[1]]."""
    lo = (packed & 0x0F).to(torch.int8) - 8
    hi = (packed >> 4).to(torch.int8) - 8
    return torch.stack([lo, hi], dim=-1).reshape(packed.shape[0], -1)


def quantize_per_token(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """torchao's asymmetric int8 per-token parameters and values, as its
    decomposed choose_qparams_affine / quantize_affine compute them in float32:
    (q int8, scale [..., 1], zero_point [..., 1] float)."""
    lo = torch.clamp(x.amin(dim=-1, keepdim=True), max=0.0)
    hi = torch.clamp(x.amax(dim=-1, keepdim=True), min=0.0)
    scale = torch.clamp((hi - lo) / 255.0, min=torch.finfo(torch.float32).tiny)
    zero_point = torch.clamp(-128.0 - torch.round(lo / scale), -128, 127)
    q = torch.clamp(torch.round(x * torch.reciprocal(scale)) + zero_point, -128, 127)
    return q.to(torch.int8), scale, zero_point


def linear_dynamic_intx(input, weight, weight_scales, group_size, weight_bits, bias):
    q, scale, zero_point = quantize_per_token(input)
    x = (q.to(torch.float32) - zero_point) * scale
    w = unpack_int4(weight) if weight_bits == 4 else weight
    n, k = w.shape
    w = (w.to(torch.float32).reshape(n, k // group_size, group_size)
         * weight_scales.reshape(n, -1, 1)).reshape(n, k)
    return torch.nn.functional.linear(x, w, bias)


_FUNCTIONS = {"linear": linear, "conv2d": conv2d, "linear_dynamic": linear_dynamic, "add": add,
              "mul": mul,
              "linear_weight_only": linear_weight_only,
              "linear_dynamic_intx": linear_dynamic_intx}


define_ops("ember_quantized", SCHEMAS, _FUNCTIONS)

ops = torch.ops.ember_quantized
