"""What the epilogue fusion passes (``fuse_conv_activation``,
``fuse_linear_activation``) share: the match of a residual add and of a
relu/hardtanh/clamp after a product, and the loop that visits each product
of a copied graph and rebuilds the program when something was fused."""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op
from ember.exir.exported import copy_graph_module, rebuild

_aten = torch.ops.aten
_ADD = _aten.add.Tensor
_RELU = _aten.relu.default
_HARDTANH = _aten.hardtanh.default
_CLAMP = _aten.clamp.default


def value_of(node: Any) -> torch.Tensor | None:
    """A node's (fake) tensor value, or None."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def only_user(node: torch.fx.Node) -> torch.fx.Node | None:
    """The one op that reads ``node``, or None (several readers, or an output)."""
    users = list(node.users)
    return users[0] if len(users) == 1 and users[0].op == "call_function" else None


def clamp_bounds(node: torch.fx.Node) -> tuple[float | None, float | None] | None:
    """The clamp range of an activation node, or None when it is not one."""
    if calls_op(node, _RELU):
        return (0.0, None)
    if calls_op(node, _HARDTANH):
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
    elif calls_op(node, _CLAMP):
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    else:
        return None
    for bound in (lo, hi):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int | float)):
            return None
    if lo is None and hi is None:
        return None
    return (None if lo is None else float(lo), None if hi is None else float(hi))


def residual_of(add: torch.fx.Node | None, x: torch.fx.Node) -> torch.fx.Node | None:
    """The other operand of ``add`` when it is ``aten.add.Tensor(x, r)`` or
    ``(r, x)`` with alpha 1 and ``r`` a tensor of x's shape and dtype (no
    broadcasting, the sum of that shape and dtype too), else None."""
    if add is None or not calls_op(add, _ADD) or add.kwargs.get("alpha", 1) != 1 \
            or len(add.args) != 2:
        return None
    other = add.args[1] if add.args[0] is x else add.args[0]
    x_val, other_val, sum_val = value_of(x), value_of(other), value_of(add)
    if (other is x or x_val is None or other_val is None or sum_val is None
            or other_val.shape != x_val.shape or other_val.dtype != x_val.dtype
            or sum_val.shape != x_val.shape or sum_val.dtype != x_val.dtype):
        return None
    return other


class EpilogueFusionPass:
    """``pass_(ep)`` returns the program with every fusable product (a node
    ``_takes``) rewritten by ``_fuse``; ``ep`` is not changed. ``fused``
    counts the rewrites of the last call, ``with_residual`` and
    ``with_activation`` the parts they took in (``_fuse`` counts)."""

    def __init__(self) -> None:
        self.fused = 0
        self.with_residual = 0
        self.with_activation = 0

    def _takes(self, node: torch.fx.Node) -> bool:
        raise NotImplementedError

    def _fuse(self, graph: torch.fx.Graph, node: torch.fx.Node) -> None:
        raise NotImplementedError

    def _start(self, ep: ExportedProgram, gm: torch.fx.GraphModule) -> None:
        """Called once per program, on the copy the pass rewrites."""

    def _replace(self, graph: torch.fx.Graph, chain: list[torch.fx.Node],
                 result: torch.fx.Node, residual: Any, activated: bool) -> None:
        """Points the readers of the chain's last node at ``result``, erases
        the chain and counts the rewrite."""
        chain[-1].replace_all_uses_with(result)
        for old in reversed(chain):
            graph.erase_node(old)
        self.fused += 1
        self.with_residual += residual is not None
        self.with_activation += activated

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.fused = self.with_residual = self.with_activation = 0
        gm = copy_graph_module(ep.graph_module)
        self._start(ep, gm)
        for node in list(gm.graph.nodes):
            if self._takes(node):
                self._fuse(gm.graph, node)
        if self.fused == 0:
            return ep
        gm.recompile()
        return rebuild(ep, gm, verifier=ep.verifiers[0])
