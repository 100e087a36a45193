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
- ``add(a int8, a_scale, a_zero_point, b int8 (a's shape), b_scale,
  b_zero_point, output_scale, output_zero_point, output_min, output_max) -> int8``
- ``linear_dynamic(input float32 [..., K], weight, weight_scales, bias?,
  quant_min, quant_max, eps) -> float32 [..., N]``: the input quantized per
  tensor with parameters chosen at run time (``choose_qparams.tensor``).

- ``linear_weight_only(input float32 [..., K], weight int8 [N, K], scales
  float32 [N, K / group_size], zero_points float32 [N, K / group_size]?,
  group_size, bias?) -> float32 [..., N]``: torchao's weight-only flows
  (int8 per channel, int4/int8 per group); the weight is
  ``(weight - zero_points) * scales`` per group.

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


def linear_weight_only(input, weight, scales, zero_points, group_size, bias):
    n, k = weight.shape
    w = weight.to(torch.float32).reshape(n, k // group_size, group_size)
    if zero_points is not None:
        w = w - zero_points.reshape(n, -1, 1)
    w = (w * scales.reshape(n, -1, 1)).reshape(n, k)
    return torch.nn.functional.linear(input, w, bias)


_FUNCTIONS = {"linear": linear, "conv2d": conv2d, "linear_dynamic": linear_dynamic, "add": add,
              "linear_weight_only": linear_weight_only}


define_ops("ember_quantized", SCHEMAS, _FUNCTIONS)

ops = torch.ops.ember_quantized
