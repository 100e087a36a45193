"""Fuse the RMS norm that transformers' decoders write out into one
``ember_fused::rms_norm``.

``LlamaRMSNorm`` (and Qwen2/Qwen3's, Mistral's, Phi-3's and Gemma's, which
compute the same in float32) exports as six ops over the hidden state::

    r = rsqrt(add(mean(pow(x, 2), [-1], keepdim=True), eps))
    y = mul(weight, mul(x, r))          # Gemma: mul(mul(x, r), add(weight, 1))

Each reads or writes a row of the hidden state (the pow and the two muls the
whole of it); the fused kernel (``kernels/portable/op_rms_norm.cpp``) reads
a row once for its sum of squares and once to scale it.

The pass rewrites ``y`` into ``ember_fused::rms_norm(x, weight, eps)``
(``ember.exir.operator.ember_fused``): the same function, whose results
differ from the op-by-op ones by the order of the sum of squares only. It
applies to float32 tensors only; either operand order of each mul and add;
``pow`` with exponent 2; ``mean`` over the last dim alone with keepdim; the
exponent and ``eps`` Python numbers or one-element constants; the weight any
float32 ``[D]`` operand (D the last dim; a computed one, as Gemma's
``1 + weight``, is folded into a constant after this pass). Without a
weight mul after it, ``x · rsqrt(...)`` fuses with no weight. Nodes of the
pattern that something else also reads stay unfused.
``ExecutorchBackendConfig(fuse_rms_norm=False)`` keeps the aten ops (a
program runtimes without Ember's kernels also run).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.exported import copy_graph_module
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator import ember_fused
from ember.exir.passes.graph_match import calls_any, only_user, scalar_of, tensor_val

_aten = torch.ops.aten
_MULS = (_aten.mul.Tensor, _aten.mul.Scalar)
_ADDS = (_aten.add.Tensor, _aten.add.Scalar)
_POWS = (_aten.pow.Tensor_Tensor, _aten.pow.Tensor_Scalar)


def _f32(node: Any) -> bool:
    val = tensor_val(node)
    return val is not None and val.dtype == torch.float32


class FuseRmsNormPass:
    """``FuseRmsNormPass()(ep)`` returns the program with every written-out
    RMS norm fused; ``ep`` is not changed. ``fused`` counts the rewrites of
    the last call."""

    def __init__(self) -> None:
        self.fused = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.fused = 0
        constants = LiftedConstants(ep, copy_graph_module(ep.graph_module))
        self._constants = constants
        for node in list(constants.gm.graph.nodes):
            if calls_op(node, _aten.rsqrt.default):
                self._fuse(constants.gm.graph, node)
        if self.fused == 0:
            return ep
        constants.remove_unused()  # the exponent and eps, when lifted
        return constants.program()

    def _scalar(self, arg: Any) -> float | None:
        return scalar_of(arg, self._constants)

    def _fuse(self, graph: torch.fx.Graph, rsqrt: torch.fx.Node) -> None:
        # rsqrt(mean(pow(x, 2), [-1], keepdim=True) + eps)
        add = rsqrt.args[0]
        if not calls_any(add, _ADDS) or len(add.args) != 2 or add.kwargs.get("alpha", 1) != 1:
            return
        mean = eps = None
        for a, b in (add.args, add.args[::-1]):
            if isinstance(a, torch.fx.Node) and calls_op(a, _aten.mean.dim):
                mean, eps = a, self._scalar(b)
                break
        if mean is None or eps is None:
            return
        square = mean.args[0]
        rank = tensor_val(square).dim() if tensor_val(square) is not None else 0
        dims = mean.args[1] if len(mean.args) > 1 else mean.kwargs.get("dim")
        keepdim = mean.args[2] if len(mean.args) > 2 else mean.kwargs.get("keepdim", False)
        if (rank < 1 or not isinstance(dims, (list, tuple)) or len(dims) != 1
                or dims[0] not in (-1, rank - 1) or keepdim is not True
                or mean.kwargs.get("dtype") is not None):
            return
        if (not calls_any(square, _POWS) or len(square.args) != 2
                or self._scalar(square.args[1]) != 2.0):
            return
        x = square.args[0]
        # x · rsqrt, either order, x the tensor the square read.
        normed = only_user(rsqrt)
        if (not calls_any(normed, _MULS) or len(normed.args) != 2
                or {id(normed.args[0]), id(normed.args[1])} != {id(x), id(rsqrt)}):
            return
        if any(len(n.users) != 1 for n in (square, mean, add, rsqrt)):
            return
        x_val, out_val = tensor_val(x), tensor_val(normed)
        if (not _f32(x) or not _f32(normed) or not _f32(rsqrt) or out_val is None
                or out_val.shape != x_val.shape):
            return
        # · weight [D], either order, when the normalized value is read by that mul alone.
        out, weight = normed, None
        scaled = only_user(normed)
        if calls_any(scaled, (_aten.mul.Tensor,)) and len(scaled.args) == 2:
            other = scaled.args[1] if scaled.args[0] is normed else scaled.args[0]
            w_val, s_val = tensor_val(other), tensor_val(scaled)
            if (other is not normed and w_val is not None and w_val.dtype == torch.float32
                    and w_val.dim() == 1 and w_val.shape[0] == x_val.shape[-1]
                    and s_val is not None and s_val.shape == x_val.shape
                    and s_val.dtype == torch.float32):
                out, weight = scaled, other
        with graph.inserting_before(out):
            fused = graph.call_function(to_edge_op(ember_fused.ops.rms_norm.default),
                                        (x, weight, eps))
        fused.meta = dict(out.meta)
        out.replace_all_uses_with(fused)
        for old in ([out] if out is normed else [out, normed]) + [rsqrt, add, mean, square]:
            graph.erase_node(old)
        self.fused += 1
