"""Fuse the rotary position embedding transformers' Llama family writes out
into one ``ember_fused::rope``.

``apply_rotary_pos_emb`` (Llama, Qwen2/Qwen3, Mistral, Gemma, Phi-3's
rotated part) computes ``q·cos + rotate_half(q)·sin`` with
``rotate_half(x) = cat(−x[..., h:], x[..., :h])``; each of q and k exports
as seven ops::

    a = mul(x, cos)
    r = cat([neg(slice_copy(x, -1, h, end)), slice_copy(x, -1, 0, h)], -1)
    y = add(a, mul(r, sin))

The pass rewrites ``y`` into ``ember_fused::rope(x, cos, sin)``
(``ember.exir.operator.ember_fused``), whose kernel
(``kernels/portable/op_rope.cpp``) rounds each product and the sum as these
ops do: the same bits, in one pass over x instead of seven tensors written.
It applies to float32 tensors whose last dim is 2h, slices of the last dim
with step 1 (the second to its end), either operand order of each mul and
the add, and cos and sin of one shape that broadcasts to x's without
enlarging it. Nodes of the pattern that something else also reads stay
unfused. ``ExecutorchBackendConfig(fuse_rope=False)`` keeps the aten ops (a
program runtimes without Ember's kernels also run).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.exported import copy_graph_module, rebuild
from ember.exir.operator import ember_fused
from ember.exir.passes.graph_match import tensor_val

_aten = torch.ops.aten


def _is(node: Any, op: Any) -> bool:
    return isinstance(node, torch.fx.Node) and calls_op(node, op)


def _slice(node: Any, rank: int) -> tuple[Any, Any, Any] | None:
    """(input, start, end) of a step-1 slice of the last dim, else None."""
    if not _is(node, _aten.slice_copy.Tensor):
        return None
    args = list(node.args) + [None] * (5 - len(node.args))
    x, dim, start, end, step = args[:5]
    dim = node.kwargs.get("dim", dim if dim is not None else 0)
    start = node.kwargs.get("start", start)
    end = node.kwargs.get("end", end)
    step = node.kwargs.get("step", 1 if step is None else step)
    if dim not in (-1, rank - 1) or step != 1:
        return None
    return x, start, end


class FuseRopePass:
    """``FuseRopePass()(ep)`` returns the program with every written-out
    half-split rotary embedding fused; ``ep`` is not changed. ``fused``
    counts the rewrites of the last call."""

    def __init__(self) -> None:
        self.fused = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.fused = 0
        gm = copy_graph_module(ep.graph_module)
        for node in list(gm.graph.nodes):
            if _is(node, _aten.add.Tensor):
                self._fuse(gm.graph, node)
        if self.fused == 0:
            return ep
        gm.recompile()
        return rebuild(ep, gm, verifier=ep.verifiers[0])

    def _fuse(self, graph: torch.fx.Graph, add: torch.fx.Node) -> None:
        if len(add.args) != 2 or add.kwargs.get("alpha", 1) != 1:
            return
        for direct, rotated in (add.args, add.args[::-1]):
            if _is(direct, _aten.mul.Tensor) and _is(rotated, _aten.mul.Tensor):
                if self._fuse_pair(graph, add, direct, rotated):
                    return

    def _fuse_pair(self, graph: torch.fx.Graph, add: torch.fx.Node, direct: torch.fx.Node,
                   rotated: torch.fx.Node) -> bool:
        # rotated = cat(...) · sin, either order.
        if len(rotated.args) != 2:
            return False
        cat, sin = rotated.args
        if not _is(cat, _aten.cat.default):
            sin, cat = rotated.args
        if not _is(cat, _aten.cat.default) or not isinstance(sin, torch.fx.Node):
            return False
        parts = cat.args[0]
        cat_dim = cat.args[1] if len(cat.args) > 1 else cat.kwargs.get("dim", 0)
        if not isinstance(parts, (list, tuple)) or len(parts) != 2:
            return False
        neg, low = parts
        if not _is(neg, _aten.neg.default):
            return False
        x_val = tensor_val(low.args[0]) if isinstance(low, torch.fx.Node) and low.args else None
        if x_val is None or x_val.dtype != torch.float32 or x_val.dim() < 1:
            return False
        rank = x_val.dim()
        d = x_val.shape[-1]
        if not isinstance(d, int) or d % 2 or cat_dim not in (-1, rank - 1):
            return False
        h = d // 2
        lo, hi = _slice(low, rank), _slice(neg.args[0], rank)
        if lo is None or hi is None or lo[0] is not hi[0]:
            return False
        x = lo[0]
        if lo[1] not in (0, None) or lo[2] != h or hi[1] != h or not (
                isinstance(hi[2], int) and hi[2] >= d):
            return False
        # direct = x · cos, either order.
        if len(direct.args) != 2 or x not in direct.args:
            return False
        cos = direct.args[1] if direct.args[0] is x else direct.args[0]
        if cos is x or not isinstance(cos, torch.fx.Node):
            return False
        cos_val, sin_val, out_val = tensor_val(cos), tensor_val(sin), tensor_val(add)
        if (cos_val is None or sin_val is None or out_val is None
                or cos_val.dtype != torch.float32 or sin_val.dtype != torch.float32
                or cos_val.shape != sin_val.shape or cos_val.dim() > rank
                or out_val.shape != x_val.shape or out_val.dtype != torch.float32):
            return False
        for i in range(1, cos_val.dim() + 1):
            if cos_val.shape[-i] != 1 and cos_val.shape[-i] != x_val.shape[-i]:
                return False
        pattern = (direct, rotated, cat, neg, neg.args[0], low)  # erased after the add
        if any(len(n.users) != 1 for n in pattern):
            return False
        with graph.inserting_before(add):
            fused = graph.call_function(to_edge_op(ember_fused.ops.rope.default), (x, cos, sin))
        fused.meta = dict(add.meta)
        add.replace_all_uses_with(fused)
        for old in (add, *pattern):
            graph.erase_node(old)
        self.fused += 1
        return True
