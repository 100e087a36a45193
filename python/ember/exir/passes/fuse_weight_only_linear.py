"""Fuse torchao's weight-only quantized linear layers into one integer-weight op.

torchao's ``Int8WeightOnlyConfig`` and ``IntxWeightOnlyConfig`` (int8 per
channel, int4/int8 per group) export to a float matmul of a weight that the
graph dequantizes from int8 constants on every call:

- ``addmm|mm(bias, x, permute((float(w) - zeros) * scales))``, the view-based
  decomposition of ``dequantize_affine`` per group of K;
- ``mul(mm(x, float(permute(w))), scales)``, Int8WeightOnlyConfig's form.

Both become ``ember_quantized.linear_weight_only(x, w, scales, zeros,
group_size, bias)``, whose kernel reads the integer weight directly
(``kernels/quantized/op_quantized_linear_weight_only.cpp``). The program
keeps the weight int8 (a quarter of float32) or, when every value lies in
[-8, 7] (torchao's int4) and K is even, two values per byte (uint8 [N, K / 2],
``ember_quantized.pack_int4``: an eighth); zero points that are all 0 are
dropped (the same weight). Only constant weights, scales and zero points whose
views keep the row-major [N, G, K / G] grouping are fused.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op
from ember.exir.exported import copy_graph_module
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator import ember_quantized
from ember.exir.passes.fuse_quantized_ops import FuseQuantizedOpsPass

aten = torch.ops.aten


class FuseWeightOnlyLinearPass:
    """``FuseWeightOnlyLinearPass()(ep)`` returns the program with every
    weight-only quantized linear fused (``ep`` is not changed); ``fused``
    counts them."""

    def __init__(self) -> None:
        self.fused = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        inputs = LiftedConstants(ep, copy_graph_module(ep.graph_module))
        self.fused = 0
        for node in list(inputs.gm.graph.nodes):
            if node.graph is not None:
                self.fused += self._fuse_node(inputs, node)
        if not self.fused:
            return ep
        FuseQuantizedOpsPass.remove_dead(inputs.gm.graph)
        inputs.remove_unused()
        return inputs.program()

    def _fuse_node(self, inputs: LiftedConstants, node: torch.fx.Node) -> bool:
        """Fuses the pattern ``node`` ends, if any (the passes deriving from
        this one replace it)."""
        if calls_op(node, aten.addmm.default) or calls_op(node, aten.mm.default):
            return self._fuse_weight_only(inputs, node) is not None
        if calls_op(node, aten.mul.Tensor):
            return self._fuse_int8_weight_only(inputs, node) is not None
        return False

    _PASS_THROUGH = (aten.view_copy.default, aten._to_copy.default, aten.clone.default)

    @classmethod
    def _constant_behind(cls, inputs: LiftedConstants, node: Any) -> torch.Tensor | None:
        """The constant a chain of views and float casts reads, or None."""
        while isinstance(node, torch.fx.Node):
            value = inputs.value(node)
            if value is not None:
                return value
            if not any(calls_op(node, op) for op in cls._PASS_THROUGH):
                return None
            if calls_op(node, aten._to_copy.default) and node.kwargs.get("dtype") not in (
                    None, torch.float32):
                return None
            node = node.args[0]
        return None

    def _affine_weight(self, inputs: LiftedConstants, node: Any):
        """(int8 [N, K], scales [N, G], zeros [N, G] or None) when ``node``
        computes ``(float(w) - zeros) * scales`` per group of K from constants
        (IntxWeightOnlyConfig's dequantize_affine, decomposed), shaped [N, K]."""
        val = getattr(node, "meta", {}).get("val")
        if val is None or val.dim() != 2 or val.dtype != torch.float32:
            return None
        n, k = val.shape
        while calls_op(node, aten.view_copy.default):
            node = node.args[0]
        if not calls_op(node, aten.mul.Tensor):
            return None
        for q_part, s_part in (node.args, node.args[::-1]):
            scales = self._constant_behind(inputs, s_part)
            if scales is None or scales.numel() == 0 or scales.numel() % n:
                continue
            zeros = None
            if calls_op(q_part, aten.sub.Tensor):
                zeros = self._constant_behind(inputs, q_part.args[1])
                if zeros is None or zeros.numel() != scales.numel():
                    continue
                q_part = q_part.args[0]
            w = self._constant_behind(inputs, q_part)
            if w is None or w.dtype != torch.int8 or w.numel() != n * k:
                continue
            groups = scales.numel() // n
            if k % groups:
                continue
            # The views must keep the row-major [N, G, K / G] grouping.
            if any(calls_op(v, aten.view_copy.default)
                   and list(v.args[1]) not in ([n, groups, k // groups], [n, k], [-1, k])
                   for v in self._chain(q_part)):
                continue
            as_f = {"scales": scales.reshape(n, groups).to(torch.float32).contiguous()}
            if zeros is not None:
                as_f["zeros"] = zeros.reshape(n, groups).to(torch.float32).contiguous()
            return w.reshape(n, k).contiguous(), as_f["scales"], as_f.get("zeros")
        return None

    @classmethod
    def _chain(cls, node: Any) -> list[torch.fx.Node]:
        out = []
        while isinstance(node, torch.fx.Node) and any(
                calls_op(node, op) for op in cls._PASS_THROUGH):
            out.append(node)
            node = node.args[0]
        return out

    def _fuse_weight_only(self, inputs: LiftedConstants, mm: torch.fx.Node) -> str | None:
        """``addmm|mm(bias, x, permute(dequantize_affine(w)))`` →
        ``ember_quantized.linear_weight_only``."""
        if calls_op(mm, aten.addmm.default):
            if mm.kwargs.get("beta", 1) != 1 or mm.kwargs.get("alpha", 1) != 1:
                return None
            b, x, wt = mm.args[:3]
        else:
            b = None
            x, wt = mm.args[:2]
        if not (calls_op(wt, aten.permute_copy.default) and list(wt.args[1]) == [1, 0]):
            return None
        parts = self._affine_weight(inputs, wt.args[0])
        if parts is None:
            return None
        bias = None
        if b is not None:
            bias = self._constant_behind(inputs, b)
            if bias is None or bias.dim() != 1:
                return None
        w, scales, zeros = parts
        return self._emit_weight_only(inputs, mm, x, w, scales, zeros, bias)

    def _fuse_int8_weight_only(self, inputs: LiftedConstants, mul: torch.fx.Node) -> str | None:
        """``mul(mm(x, float(permute(w))), scales)`` (Int8WeightOnlyConfig) →
        ``ember_quantized.linear_weight_only`` with one group per row."""
        for mm, s_part in (mul.args, mul.args[::-1]):
            if not calls_op(mm, aten.mm.default) or len(mm.users) != 1:
                continue
            x, cast = mm.args[:2]
            if not (calls_op(cast, aten._to_copy.default)
                    and cast.kwargs.get("dtype") == torch.float32):
                continue
            perm = cast.args[0]
            if not (calls_op(perm, aten.permute_copy.default) and list(perm.args[1]) == [1, 0]):
                continue
            w = inputs.value(perm.args[0]) if isinstance(perm.args[0], torch.fx.Node) else None
            scales = self._constant_behind(inputs, s_part)
            if w is None or w.dtype != torch.int8 or w.dim() != 2 or scales is None:
                continue
            n = w.shape[0]
            if scales.numel() != n or mul.meta["val"].shape != mm.meta["val"].shape:
                continue
            return self._emit_weight_only(inputs, mul, x, w.contiguous(),
                                          scales.reshape(n, 1).to(torch.float32).contiguous(),
                                          None, None)
        return None

    def _emit_weight_only(self, inputs, target, x, w, scales, zeros, bias) -> str:
        group = w.shape[1] // scales.shape[1]
        if zeros is not None and not bool(zeros.any()):
            zeros = None  # (w - 0) * s is w * s: nothing to store
        if w.shape[1] % 2 == 0 and w.numel() and int(w.min()) >= -8 and int(w.max()) <= 7:
            w = ember_quantized.pack_int4(w)  # lossless: every value is an int4 one
        wn = inputs.add(w, "wo_weight")
        sn = inputs.add(scales, "wo_scales")
        zn = inputs.add(zeros, "wo_zeros") if zeros is not None else None
        bn = None
        if bias is not None:
            bn = inputs.add(bias.to(torch.float32).contiguous(), "wo_bias")
        FuseQuantizedOpsPass.replace_node(
            inputs.gm.graph, target, ember_quantized.ops.linear_weight_only.default,
            (x, wn, sn, zn, int(group), bn))
        return "linear_weight_only"
