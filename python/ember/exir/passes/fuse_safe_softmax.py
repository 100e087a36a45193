"""Put ``_safe_softmax`` back together: one ``ember_fused::safe_softmax``.

``to_edge`` decomposes ``scaled_dot_product_attention`` into its math form,
whose softmax is ``aten._safe_softmax`` (a query row that may attend to
nothing gets zeros, not NaN), itself decomposed into seven ops::

    s = _softmax(x, dim, False)
    dead = logical_not(any(logical_not(eq(x, -inf)), dim, keepdim=True))
    y = where(dead, full_like(s, 0), s)

The six after the softmax each read or write a tensor of the scores' size
(about 8% of a BERT-base forward pass on one thread, the attention mask
bookkeeping of every layer). The pass rewrites ``y`` to
``ember_fused::safe_softmax(x, dim)`` (``ember.exir.operator.ember_fused``),
whose kernel is the softmax kernel with the all -inf check folded in
(``kernels/portable/op_safe_softmax.cpp``).

It applies only to exactly that pattern on float32 tensors: ``eq`` against
-inf (a number or a one-element constant tensor), ``any`` over the softmax's
dim with keepdim, ``full_like`` with 0 and the softmax's dtype. Nodes of the
pattern that something else also reads stay.
``ExecutorchBackendConfig(fuse_safe_softmax=False)`` keeps the aten ops (a
program other runtimes of the format can run).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.exported import copy_graph_module, rebuild
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator import ember_fused

_aten = torch.ops.aten


def _val(node: Any) -> torch.Tensor | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _dim(dim: Any, rank: int) -> int | None:
    if isinstance(dim, (list, tuple)):
        if len(dim) != 1:
            return None
        dim = dim[0]
    if not isinstance(dim, int) or isinstance(dim, bool):
        return None
    return dim + rank if dim < 0 else dim


class FuseSafeSoftmaxPass:
    """``FuseSafeSoftmaxPass()(ep)`` returns the program with every safe
    softmax pattern fused; ``ep`` is not changed. ``fused`` counts the
    rewrites of the last call."""

    def __init__(self) -> None:
        self.fused = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.fused = 0
        gm = copy_graph_module(ep.graph_module)
        constants = LiftedConstants(ep, gm)
        for node in list(gm.graph.nodes):
            if calls_op(node, _aten.where.self):
                self._fuse(gm.graph, node, constants)
        if self.fused == 0:
            return ep
        gm.recompile()
        return rebuild(ep, gm, verifier=ep.verifiers[0])

    def _is_neg_inf(self, value: Any, constants: LiftedConstants) -> bool:
        if isinstance(value, torch.fx.Node):
            data = constants.value(value)
            return data is not None and data.numel() == 1 and bool(data.reshape(()) == -math.inf)
        return isinstance(value, float) and value == -math.inf

    def _fuse(self, graph: torch.fx.Graph, where: torch.fx.Node,
              constants: LiftedConstants) -> None:
        if len(where.args) != 3:
            return
        cond, zeros, soft = where.args
        if not (isinstance(soft, torch.fx.Node) and calls_op(soft, _aten._softmax.default)):
            return
        x, dim, half_to_float = soft.args
        x_val, s_val = _val(x), _val(soft)
        if (half_to_float or x_val is None or s_val is None or x_val.dtype != torch.float32
                or s_val.dtype != torch.float32 or _val(where) is None
                or _val(where).shape != s_val.shape):
            return
        rank = x_val.dim()
        d = _dim(dim, rank) if rank > 0 else None
        if d is None:
            return
        # full_like(s, 0) with s's dtype.
        if not (isinstance(zeros, torch.fx.Node) and calls_op(zeros, _aten.full_like.default)
                and zeros.args[0] is soft and zeros.args[1] in (0, 0.0)
                and _val(zeros) is not None and _val(zeros).dtype == torch.float32
                and _val(zeros).shape == s_val.shape):
            return
        # logical_not(any(logical_not(eq(x, -inf)), dim, True))
        if not (isinstance(cond, torch.fx.Node) and calls_op(cond, _aten.logical_not.default)):
            return
        any_node = cond.args[0]
        if not (isinstance(any_node, torch.fx.Node)
                and (calls_op(any_node, _aten.any.dim) or calls_op(any_node, _aten.any.dims))):
            return
        any_dim = any_node.args[1] if len(any_node.args) > 1 else any_node.kwargs.get("dim")
        keepdim = any_node.args[2] if len(any_node.args) > 2 else any_node.kwargs.get("keepdim")
        if _dim(any_dim, rank) != d or keepdim is not True:
            return
        not_eq = any_node.args[0]
        if not (isinstance(not_eq, torch.fx.Node)
                and calls_op(not_eq, _aten.logical_not.default)):
            return
        eq = not_eq.args[0]
        if not (isinstance(eq, torch.fx.Node)
                and (calls_op(eq, _aten.eq.Tensor) or calls_op(eq, _aten.eq.Scalar))
                and eq.args[0] is x and self._is_neg_inf(eq.args[1], constants)):
            return
        with graph.inserting_before(where):
            fused = graph.call_function(to_edge_op(ember_fused.ops.safe_softmax.default), (x, d))
        # The softmax's source line and name (profiles and errors point at it).
        fused.meta = dict(soft.meta)
        fused.meta["val"] = where.meta["val"]
        where.replace_all_uses_with(fused)
        graph.erase_node(where)
        for old in (cond, any_node, not_eq, eq, zeros, soft):
            if not old.users:
                graph.erase_node(old)
        self.fused += 1
