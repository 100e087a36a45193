"""Fuse a linear layer with the residual add and the activation after it.

A transformer's linear layers reach the Edge dialect as ``addmm(bias, x2d,
weightᵀ)`` (or ``mm``) between ``view_copy`` ops, and what reads them is an
activation (the MLP's GELU) or a residual add (the attention output and the
MLP's second layer)::

    addmm -> view_copy [-> clone] -> add(·, residual) / gelu / relu / clamp

Each becomes one ``ember_fused::fused_linear(x2d, weightᵀ, bias, residual,
activation, min, max)`` (``ember.exir.operator.ember_fused``) and, where
the chain changed the shape, one ``view_copy`` to it. The kernel adds the
residual and applies the activation to each GEMM output tile while it is in
cache, so neither reads and writes the whole activation once more.

It applies only when the result is the same program:

- the product is float32, ``addmm`` with ``beta == alpha == 1`` and a 1-D
  bias of the output's width, or ``mm``, and its ``mat2`` is a program
  constant (a weight, or a permute/view of one): a linear layer, not a
  product of two activations;
- each op between it and the add/activation (``view_copy``, ``clone``) and
  each fused op is read by the next one alone;
- the add is ``aten.add.Tensor`` with alpha 1 whose other operand has the
  shape and dtype of the sum (no broadcasting); the activation is
  ``gelu`` (either approximation), ``relu``, or ``hardtanh``/``clamp`` with
  number bounds, after the add when both are there.

Float addition commutes exactly, so ``residual + linear`` fuses too.
``ExecutorchBackendConfig(fuse_linear_activation=False)`` keeps the aten ops
(a program other runtimes of the format can run). With the bf16 precision
its fused layers become ``linear_bf16`` with the same epilogue.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator import ember_fused
from ember.exir.passes.epilogue_fusion import (
    EpilogueFusionPass,
    clamp_bounds,
    only_user,
    residual_of,
    value_of,
)

_aten = torch.ops.aten
_ADDMM = _aten.addmm.default
_MM = _aten.mm.default
_GELU = _aten.gelu.default
_VIEW = _aten.view_copy.default
_CLONE = _aten.clone.default
_WEIGHT_VIEWS = (_aten.permute_copy.default, _aten.t_copy.default, _VIEW)
_GELU_MODES = {"none": "gelu", "tanh": "gelu_tanh"}


def _like(val: torch.Tensor) -> torch.Tensor:
    """A new (fake) tensor of val's shape and dtype, for a new node's meta."""
    mode = getattr(val, "fake_mode", None)
    if mode is None:
        return torch.empty_like(val)
    with mode:
        return torch.empty_like(val)


def _passes_through(node: torch.fx.Node, src: torch.fx.Node) -> bool:
    """A view_copy of ``src``, or a clone of it that keeps the layout."""
    if not node.args or node.args[0] is not src:
        return False
    if calls_op(node, _VIEW):
        return True
    if calls_op(node, _CLONE):
        fmt = node.kwargs.get("memory_format")
        return fmt in (None, torch.contiguous_format, torch.preserve_format)
    return False


def _gelu_activation(node: torch.fx.Node) -> str | None:
    if not calls_op(node, _GELU):
        return None
    mode = node.args[1] if len(node.args) > 1 else node.kwargs.get("approximate", "none")
    return _GELU_MODES.get(mode)


class FuseLinearActivationPass(EpilogueFusionPass):
    """``FuseLinearActivationPass()(ep)`` returns the program with every
    fusable linear layer [+ residual] [+ activation] fused; ``ep`` is not
    changed. ``fused`` counts the rewrites of the last call,
    ``with_residual`` and ``with_activation`` the parts they took in."""

    def _start(self, ep: ExportedProgram, gm: torch.fx.GraphModule) -> None:
        self._constants = LiftedConstants(ep, gm)

    def _takes(self, node: torch.fx.Node) -> bool:
        return calls_op(node, _ADDMM) or calls_op(node, _MM)

    def _is_weight(self, node: Any) -> bool:
        """A program constant, or a permute/view of one (folded at export)."""
        while isinstance(node, torch.fx.Node) and any(calls_op(node, op) for op in _WEIGHT_VIEWS):
            node = node.args[0]
        return (isinstance(node, torch.fx.Node) and node.op == "placeholder"
                and self._constants.value(node) is not None)

    def _product(self, mm: torch.fx.Node) -> tuple[Any, Any, Any] | None:
        """(input, mat2, bias) of a fusable product, else None."""
        out = value_of(mm)
        if out is None or out.dtype != torch.float32 or out.dim() != 2:
            return None
        if not self._is_weight(mm.args[1] if calls_op(mm, _MM) else mm.args[2]):
            return None
        if calls_op(mm, _MM):
            return mm.args[0], mm.args[1], None
        if len(mm.args) != 3 or any(mm.kwargs.get(k, 1) != 1 for k in ("beta", "alpha")):
            return None
        bias, x, w = mm.args
        bias_val = value_of(bias)
        if (bias_val is None or bias_val.dtype != torch.float32 or bias_val.dim() != 1
                or bias_val.shape[0] != out.shape[1]):
            return None
        return x, w, bias

    def _fuse(self, graph: torch.fx.Graph, mm: torch.fx.Node) -> None:
        operands = self._product(mm)
        if operands is None:
            return
        chain = [mm]  # The nodes the fused op replaces, in order.
        view = None  # The last view_copy in the chain: its size is the result's.
        user = only_user(mm)
        while user is not None and _passes_through(user, chain[-1]):
            chain.append(user)
            if calls_op(user, _VIEW):
                view = user
            user = only_user(user)
        through = len(chain)
        residual = residual_of(user, chain[-1])
        if residual is not None:
            chain.append(user)
        lo = hi = None
        activation = "none"
        act = only_user(chain[-1])
        if act is not None and act.args and act.args[0] is chain[-1]:
            bounds = clamp_bounds(act)
            gelu = _gelu_activation(act)
            if bounds is not None:
                lo, hi = bounds
                chain.append(act)
            elif gelu is not None:
                activation = gelu
                chain.append(act)
        if len(chain) == through:
            return  # Nothing to fuse: the product stays addmm/mm.
        last = chain[-1]
        x, w, bias = operands
        n = value_of(mm).shape[1]
        with graph.inserting_before(last):
            if residual is not None and view is not None:
                # The residual has the chain's shape: read it as [m, n].
                residual = graph.call_function(to_edge_op(_VIEW), (residual, [-1, n]))
                residual.meta = dict(mm.meta)
                residual.meta["val"] = _like(value_of(mm))
            fused = graph.call_function(to_edge_op(ember_fused.ops.fused_linear.default),
                                        (x, w, bias, residual, activation, lo, hi))
            # The product's source line and name (profiles and errors point at it).
            fused.meta = dict(mm.meta)
            result = fused
            if view is not None:
                result = graph.call_function(to_edge_op(_VIEW), (fused, view.args[1]))
                result.meta = dict(view.meta)
                result.meta["val"] = last.meta["val"]
        self._replace(graph, chain, result, residual,
                      lo is not None or hi is not None or activation != "none")
