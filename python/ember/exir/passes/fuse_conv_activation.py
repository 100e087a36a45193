"""Fuse a convolution with the residual add and the activation after it.

``relu(convolution(x, w, b) + residual)`` — a ResNet block's tail, and with
either part missing most of a CNN — becomes one
``ember_fused::fused_convolution(x, w, b, ..., residual, min=0, max=None)``
(``ember.exir.operator.ember_fused``). Its kernel adds the residual and clamps
each output tile after the GEMM wrote it, while it is in cache: the add and
the relu no longer read and write the whole activation once each.

It applies only when the result is the same program:

- the convolution is not transposed, has 1 or 2 spatial dimensions and a
  float32 output, and its output is read by the next op alone;
- the add is ``aten.add.Tensor`` with alpha 1 whose other operand is a tensor
  of the output's shape and dtype (no broadcasting);
- the activation is ``relu``, ``relu6``-style ``hardtanh`` or ``clamp`` with
  number bounds, reading the convolution (or the add) alone.

Float addition commutes exactly, so ``residual + conv`` fuses too. Anything
else is left as it is; ``ExecutorchBackendConfig(fuse_conv_activation=False)``
keeps the aten ops (a program other runtimes of the format can run).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.exported import copy_graph_module, rebuild
from ember.exir.operator import ember_fused

_aten = torch.ops.aten
_CONV = _aten.convolution.default
_ADD = _aten.add.Tensor
_RELU = _aten.relu.default
_HARDTANH = _aten.hardtanh.default
_CLAMP = _aten.clamp.default


def _val(node: Any) -> torch.Tensor | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _only_user(node: torch.fx.Node) -> torch.fx.Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


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
    x_val, other_val, sum_val = _val(x), _val(other), _val(add)
    if (other is x or x_val is None or other_val is None or sum_val is None
            or other_val.shape != x_val.shape or other_val.dtype != x_val.dtype
            or sum_val.shape != x_val.shape or sum_val.dtype != x_val.dtype):
        return None
    return other


class FuseConvActivationPass:
    """``FuseConvActivationPass()(ep)`` returns the program with every
    fusable convolution [+ residual] [+ activation] fused; ``ep`` is not
    changed. ``fused`` counts the rewrites of the last call, ``with_residual``
    and ``with_activation`` the parts they took in."""

    def __init__(self) -> None:
        self.fused = 0
        self.with_residual = 0
        self.with_activation = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.fused = self.with_residual = self.with_activation = 0
        gm = copy_graph_module(ep.graph_module)
        for node in list(gm.graph.nodes):
            if calls_op(node, _CONV):
                self._fuse(gm.graph, node)
        if self.fused == 0:
            return ep
        gm.recompile()
        return rebuild(ep, gm, verifier=ep.verifiers[0])

    def _fuse(self, graph: torch.fx.Graph, conv: torch.fx.Node) -> None:
        x, w, b, stride, padding, dilation, transposed, output_padding, groups = conv.args
        out = _val(conv)
        if (transposed or any(output_padding) or out is None or out.dtype != torch.float32
                or out.dim() not in (3, 4)):
            return
        chain = [conv]  # The nodes the fused op replaces, in order.
        user = _only_user(conv)
        residual = residual_of(user, conv)
        if residual is not None:
            chain.append(user)
        lo = hi = None
        act = _only_user(chain[-1])
        bounds = clamp_bounds(act) if act is not None else None
        if bounds is not None and act.args[0] is chain[-1]:
            lo, hi = bounds
            chain.append(act)
        if len(chain) == 1:
            return
        last = chain[-1]
        args = (x, w, b, list(stride), list(padding), list(dilation), groups, residual, lo, hi)
        with graph.inserting_before(last):
            fused = graph.call_function(to_edge_op(ember_fused.ops.fused_convolution.default), args)
        # The convolution's source line and name (profiles and errors point at it).
        fused.meta = dict(conv.meta)
        fused.meta["val"] = last.meta["val"]
        last.replace_all_uses_with(fused)
        for old in reversed(chain):
            graph.erase_node(old)
        self.fused += 1
        self.with_residual += residual is not None
        self.with_activation += lo is not None or hi is not None
