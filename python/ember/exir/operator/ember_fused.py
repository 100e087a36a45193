"""Ember's fused float ops (``ember_fused::``), with their out variants.

``ember.exir.passes.fuse_conv_activation`` rewrites a convolution followed by
a residual add and/or an activation into one of these, so the runtime's kernel
(``kernels/portable/op_fused_convolution.cpp``) adds the residual and clamps
each output tile while it is still in cache, instead of running two more ops
that each read and write the whole activation. The eager implementations here
are the reference: they compute what the unfused ops compute, in the same
order, so a program with fused ops means exactly what the one without meant.

- ``fused_convolution(input, weight, bias?, stride, padding, dilation, groups,
  residual?, min?, max?) -> Tensor``: ``y = convolution(input, weight, bias)``
  (not transposed), then ``y = y + residual`` when there is a residual (the
  output's shape and dtype), then ``y = clamp(y, min, max)`` with either bound
  optional (relu is ``min=0``, relu6 and hardtanh are both bounds).
"""

from __future__ import annotations

import torch

from ember.exir.operator.library import define_ops

_CONVOLUTION = (
    "Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
    "int groups, Tensor? residual, float? min, float? max"
)
_OUT = "*, Tensor(a!) out) -> Tensor(a!)"

SCHEMAS = {
    "fused_convolution": f"({_CONVOLUTION}) -> Tensor",
    "fused_convolution.out": f"({_CONVOLUTION}, {_OUT}",
}


def fused_convolution(input, weight, bias, stride, padding, dilation, groups, residual, min, max):
    y = torch.ops.aten.convolution.default(input, weight, bias, stride, padding, dilation, False,
                                           [0] * len(stride), groups)
    if residual is not None:
        y = y + residual
    if min is not None or max is not None:
        y = torch.clamp(y, min, max)
    return y


_FUNCTIONS = {"fused_convolution": fused_convolution}


define_ops("ember_fused", SCHEMAS, _FUNCTIONS)

ops = torch.ops.ember_fused
