"""Put back the tanh GELU that a model wrote out in elementwise ops.

GPT-2's ``gelu_new`` (transformers' ``NewGELUActivation``, also in
GPT-J, CodeGen, ...) computes ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``
op by op, so the Edge program reads and writes the MLP's widest activation
eight times (pow, three mul, two add, tanh, mul)::

    h = mul(x, 0.5)
    t = tanh(mul(add(x, mul(pow(x, 3), 0.044715)), 0.7978845608))
    y = mul(h, add(t, 1))

This pass rewrites it into ``aten.gelu(x, approximate="tanh")``, the
same function: a core ATen op every runtime of the format runs, and one
that ``fuse_linear_activation`` then folds into the linear layer before
it. The results differ from the op-by-op ones by rounding only (eager's own
``gelu(approximate="tanh")`` and Ember's kernel each round differently).

Both operand orders of every mul and add match; the constants may be
Python numbers or lifted one-element tensors and must equal the formula's
to float32 precision. Every intermediate must be read by the pattern alone.
``ExecutorchBackendConfig(fuse_gelu_tanh=False)`` keeps the ops as written.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.exported import copy_graph_module
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.passes.graph_match import calls_any, only_user, scalar_of

_aten = torch.ops.aten
_MULS = (_aten.mul.Tensor, _aten.mul.Scalar)
_ADDS = (_aten.add.Tensor, _aten.add.Scalar)
_POWS = (_aten.pow.Tensor_Tensor, _aten.pow.Tensor_Scalar)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class FuseGeluTanhPass:
    """``FuseGeluTanhPass()(ep)`` returns the program with every written-out
    tanh GELU replaced by ``aten.gelu(approximate="tanh")``; ``ep`` is not
    changed. ``fused`` counts the rewrites of the last call."""

    def __init__(self) -> None:
        self.fused = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.fused = 0
        constants = LiftedConstants(ep, copy_graph_module(ep.graph_module))
        self._constants = constants
        for node in list(constants.gm.graph.nodes):
            if calls_op(node, _aten.tanh.default):
                self._fuse(constants.gm.graph, node)
        if self.fused == 0:
            return ep
        constants.remove_unused()
        return constants.program()

    def _is(self, arg: Any, want: float) -> bool:
        got = scalar_of(arg, self._constants)
        return got is not None and abs(got - want) <= 1e-6 * abs(want)

    def _times(self, node: Any, want: float) -> Any:
        """The tensor operand of ``mul(t, want)`` / ``mul(want, t)``, else None."""
        if not calls_any(node, _MULS) or len(node.args) != 2:
            return None
        a, b = node.args
        if self._is(b, want) and isinstance(a, torch.fx.Node):
            return a
        if self._is(a, want) and isinstance(b, torch.fx.Node):
            return b
        return None

    def _fuse(self, graph: torch.fx.Graph, tanh: torch.fx.Node) -> None:
        # tanh(√(2/π)·(x + 0.044715·x³))
        scaled = tanh.args[0]
        inner = self._times(scaled, _SQRT_2_OVER_PI)
        if not calls_any(inner, _ADDS) or len(inner.args) != 2 or inner.kwargs.get("alpha", 1) != 1:
            return
        x = cube_term = cube = None
        for a, b in (inner.args, inner.args[::-1]):
            power = self._times(b, 0.044715)  # x³ in 0.044715·x³
            if (calls_any(power, _POWS) and power.args[0] is a and len(power.args) == 2
                    and self._is(power.args[1], 3.0)):
                x, cube_term, cube = a, b, power
                break
        if x is None:
            return
        # 1 + tanh, then (0.5·x)·(1 + tanh), either order.
        one_plus = only_user(tanh)
        if (not calls_any(one_plus, _ADDS) or len(one_plus.args) != 2
                or one_plus.kwargs.get("alpha", 1) != 1):
            return
        other = one_plus.args[1] if one_plus.args[0] is tanh else one_plus.args[0]
        if not self._is(other, 1.0):
            return
        out = only_user(one_plus)
        if not calls_any(out, _MULS) or len(out.args) != 2:
            return
        half = out.args[1] if out.args[0] is one_plus else out.args[0]
        if self._times(half, 0.5) is not x:
            return
        pattern = (scaled, inner, cube_term, cube, tanh, one_plus, half)
        if any(len(n.users) != 1 for n in pattern):
            return
        out_val, x_val = out.meta.get("val"), x.meta.get("val")
        if (not isinstance(out_val, torch.Tensor) or not isinstance(x_val, torch.Tensor)
                or out_val.dtype != x_val.dtype or out_val.shape != x_val.shape
                or not x_val.is_floating_point()):
            return
        with graph.inserting_before(out):
            gelu = graph.call_function(to_edge_op(_aten.gelu.default), (x,),
                                       {"approximate": "tanh"})
        gelu.meta = dict(tanh.meta)
        gelu.meta["val"] = out_val
        out.replace_all_uses_with(gelu)
        graph.erase_node(out)
        for old in (one_plus, half, tanh, scaled, inner, cube_term, cube):
            graph.erase_node(old)
        self.fused += 1
