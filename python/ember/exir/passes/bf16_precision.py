"""Run linear layers and convolutions in bf16: Ember's opt-in bf16 precision.

With ``ExecutorchBackendConfig(precision="bf16")`` every float32 linear layer
with a constant weight — ``addmm(bias, x, permute(w))`` or ``mm(x,
permute(w))`` as ``to_edge`` writes ``nn.Linear``, or the same with the
transposed weight already a constant, or ``fused_linear`` (a linear layer
with its residual add and activation, ``fuse_linear_activation``) — becomes
``ember_fused::linear_bf16(x, bfloat16(w), bias)`` (a ``fused_linear``:
``fused_linear_bf16`` with its residual, activation and clamp)
(``ember.exir.operator.ember_fused``). The weight is stored as bfloat16 (half
the bytes); the kernel rounds the activations to bfloat16 and sums the
products in float32, with AVX512-BF16's dot-product instruction where the CPU
has it (Zen 4, Sapphire Rapids), twice the multiply-adds per instruction of a
float32 FMA.

Convolutions with a constant weight that run as a GEMM (1-D and 2-D, not
transposed, not depthwise) become ``ember_fused::fused_convolution`` with the
weight in bfloat16. The kernel chooses at load how to run each: on AMX hosts
an implicit GEMM on the tiles (``kernels/portable/util/conv_bf16_amx.h``);
elsewhere a 3×3 stride-1 layer with an output plane of 28×28 or more widens
its weight back to float32 and runs Winograd F(4×4, 3×3), whose 4× fewer
multiplies beat AVX512-BF16's 2× rate there (this pass made that choice
ahead of time before, which kept those layers off the tiles).

It changes the numbers: each operand loses the 16 low bits of its mantissa
(a relative error of up to 2^-9 per value), so outputs move by about 0.1–1%
of their magnitude (``docs/bf16.md`` states what was measured). It is off by
default; the program it writes runs only on runtimes with Ember's kernels.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op
from ember.exir.exported import copy_graph_module
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator import ember_fused
from ember.exir.passes.fuse_quantized_ops import FuseQuantizedOpsPass

aten = torch.ops.aten
_FUSED_CONV = ember_fused.ops.fused_convolution.default
_FUSED_LINEAR = ember_fused.ops.fused_linear.default


def _val(node: Any) -> torch.Tensor | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


class Bf16PrecisionPass:
    """``Bf16PrecisionPass()(ep)`` returns the program with every float32 linear
    layer and GEMM convolution whose weight is a constant computing in bf16
    (``ep`` is not changed); ``converted`` counts them."""

    def __init__(self) -> None:
        self.converted = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        inputs = LiftedConstants(ep, copy_graph_module(ep.graph_module))
        self.converted = 0
        for node in list(inputs.gm.graph.nodes):
            if calls_op(node, aten.addmm.default) or calls_op(node, aten.mm.default) \
                    or calls_op(node, _FUSED_LINEAR):
                self.converted += self._convert(inputs, node)
            elif calls_op(node, aten.convolution.default) or calls_op(node, _FUSED_CONV):
                self.converted += self._convert_conv(inputs, node)
        if not self.converted:
            return ep
        FuseQuantizedOpsPass.remove_dead(inputs.gm.graph)
        inputs.remove_unused()
        return inputs.program()

    @staticmethod
    def _weight(inputs: LiftedConstants, mat2: Any) -> torch.Tensor | None:
        """The [out, in] float32 weight behind ``mat2`` ([in, out]), or None."""
        if not isinstance(mat2, torch.fx.Node):
            return None
        value = inputs.value(mat2)
        if value is not None:
            return value.t()
        if calls_op(mat2, aten.permute_copy.default) and list(mat2.args[1]) == [1, 0] \
                and isinstance(mat2.args[0], torch.fx.Node):
            return inputs.value(mat2.args[0])
        return None

    def _convert(self, inputs: LiftedConstants, mm: torch.fx.Node) -> bool:
        epilogue: tuple = ()
        if calls_op(mm, _FUSED_LINEAR):
            # fused_linear(x, weightᵀ, bias, residual, activation, min, max):
            # its epilogue is linear_bf16's too.
            x, mat2, bias, residual = mm.args[:4]
            rest = list(mm.args[4:]) + [mm.kwargs.get(k, d) for k, d in
                                        (("activation", "none"), ("min", None),
                                         ("max", None))][len(mm.args[4:]):]
            epilogue = (residual, *rest)
        elif calls_op(mm, aten.addmm.default):
            if mm.kwargs.get("beta", 1) != 1 or mm.kwargs.get("alpha", 1) != 1:
                return False
            bias, x, mat2 = mm.args[:3]
        else:
            bias = None
            x, mat2 = mm.args[:2]
        x_val, out_val = _val(x), _val(mm)
        if x_val is None or out_val is None or x_val.dtype != torch.float32 \
                or out_val.dtype != torch.float32 or x_val.dim() != 2:
            return False
        w = self._weight(inputs, mat2)
        if w is None or w.dtype != torch.float32 or w.dim() != 2:
            return False
        n = w.shape[0]
        if bias is not None:
            b_val = _val(bias)
            # The kernel adds a per-output bias; addmm broadcasts more.
            if b_val is None or b_val.dtype != torch.float32 or b_val.numel() != n \
                    or b_val.dim() not in (1, 2) or (b_val.dim() == 2 and b_val.shape[0] != 1):
                return False
            if b_val.dim() == 2:
                constant = inputs.value(bias)
                if constant is None:
                    return False
                bias = inputs.add(constant.reshape(n).contiguous(), "bf16_bias")
        weight = inputs.add(w.to(torch.bfloat16).contiguous(), "bf16_weight")
        if epilogue:
            FuseQuantizedOpsPass.replace_node(inputs.gm.graph, mm,
                                              ember_fused.ops.fused_linear_bf16.default,
                                              (x, weight, bias, *epilogue))
        else:
            FuseQuantizedOpsPass.replace_node(inputs.gm.graph, mm,
                                              ember_fused.ops.linear_bf16.default,
                                              (x, weight, bias))
        return True

    def _convert_conv(self, inputs: LiftedConstants, conv: torch.fx.Node) -> bool:
        fused = calls_op(conv, _FUSED_CONV)
        if fused:
            x, w, b, stride, padding, dilation, groups, residual, lo, hi = conv.args
        else:
            x, w, b, stride, padding, dilation, transposed, output_padding, groups = conv.args
            if transposed or any(output_padding):
                return False
            residual = lo = hi = None
        x_val, out = _val(x), _val(conv)
        weight = inputs.value(w) if isinstance(w, torch.fx.Node) else None
        if x_val is None or out is None or weight is None or x_val.dtype != torch.float32 \
                or weight.dtype != torch.float32 or weight.dim() not in (3, 4) \
                or out.dim() != weight.dim() or not out.is_contiguous():
            return False
        ocg = weight.shape[0] // groups
        if weight.shape[1] == 1 and ocg <= 4:
            return False  # Depthwise: a direct loop, no GEMM.
        w16 = inputs.add(weight.to(torch.bfloat16).contiguous(), "bf16_conv_weight")
        args = (x, w16, b, list(stride), list(padding), list(dilation), groups, residual, lo, hi)
        FuseQuantizedOpsPass.replace_node(inputs.gm.graph, conv, _FUSED_CONV, args)
        return True
