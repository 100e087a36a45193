"""Run a CNN's convolutions on the channel-blocked layout NCHW16c.

Every float32 2-D convolution the blocked kernel takes
(``ember_fused::conv2d_nchw16c``: one group, dilation 1, stride 1 or 2, a
constant weight, output channels in whole blocks of 16, input channels too or
fewer than 16 — a stem, which reads its NCHW input as it is) is rewritten to
write ``[N, C/16, H, W, 16]`` tensors, a 2-D max pool of a blocked value to
``max_pool2d_nchw16c``, and the layout is changed only at the edges of the
blocked region: a value an NCHW op produces gets one ``to_nchw16c`` (shared
by every blocked reader), a blocked value an NCHW op reads gets one
``from_nchw16c``. In ResNet-50 everything from the stem to the last block is
blocked, with one conversion, before the mean (``docs/nchw16c.md`` has the
kernel and the numbers).

Which convolutions go blocked is a small cost model: the blocked kernel
saves about a third of a convolution's time, and a layout change costs
about as much per value it copies as ``macs_per_converted_value``
multiply-adds of that saving (about 200 on the Xeon and EPYC hosts
measured). The pass picks the set of convolutions whose savings exceed the
layout changes they need by the most, searching one convolution at a time
from none and from all: a large 3×3 layer joins on its own, a pointwise
layer next to blocked ones joins because the change moves rather than adds,
a chain of smaller layers joins together, and a lone pointwise layer
between depthwise ones (MobileNet's) stays NCHW.

The rewritten program computes what the convolutions computed (the kernel
sums in another order: float32 rounding differs). It runs only on runtimes
with Ember's kernels; ``ExecutorchBackendConfig(nchw16c_layout=False)`` keeps
the NCHW convolutions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.exported import copy_graph_module
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator import ember_fused

_CONV = torch.ops.aten.convolution.default
_FUSED_CONV = ember_fused.ops.fused_convolution.default
_POOL = ember_fused.ops.max_pool2d.default
_BLOCK = ember_fused.NCHW16C_BLOCK


@dataclass
class _Candidate:
    """A node the pass may put on the blocked layout: the values it would
    read blocked (not a stem's plain input) and what it saves, in values
    converted."""

    kind: str  # "conv" or "pool"
    blocked_inputs: list[torch.fx.Node]
    saving: float


def _val(node: Any) -> torch.Tensor | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


class Nchw16cLayoutPass:
    """``Nchw16cLayoutPass()(ep)`` returns the program with its blocked-kernel
    convolutions (and the max pools between them) on NCHW16c (``ep`` is not
    changed). ``converted`` counts the convolutions and pools, ``to_blocked``
    and ``from_blocked`` the layout changes left at the edges, in the last
    call."""

    def __init__(self, macs_per_converted_value: int = 200) -> None:
        self.macs_per_converted_value = macs_per_converted_value
        self.converted = 0
        self.to_blocked = 0
        self.from_blocked = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.converted = self.to_blocked = self.from_blocked = 0
        inputs = LiftedConstants(ep, copy_graph_module(ep.graph_module))
        self._mode = inputs.fake_mode
        graph = inputs.gm.graph
        candidates = {}
        for node in graph.nodes:
            candidate = self._candidate(inputs, node)
            if candidate is not None:
                candidates[node] = candidate
        chosen = self._choose(candidates)
        blocked: dict[torch.fx.Node, torch.fx.Node] = {}  # NCHW value -> its blocked form
        made_to: list[torch.fx.Node] = []
        made_from: list[torch.fx.Node] = []
        for node in candidates:
            if node not in chosen:
                continue
            with graph.inserting_before(node):
                # Operands read again: an earlier rewrite may have replaced one.
                if candidates[node].kind == "conv":
                    new = self._conv(graph, inputs, node, blocked, made_to)
                else:
                    new = self._pool(graph, node, blocked, made_to)
                new.meta = {**node.meta, "val": new.meta["val"]}  # source line and name
                back = graph.call_function(to_edge_op(ember_fused.ops.from_nchw16c.default),
                                           (new, _val(node).shape[1]))
                back.meta = {"val": _val(node)}
            node.replace_all_uses_with(back)
            graph.erase_node(node)
            blocked[back] = new
            made_from.append(back)
            self.converted += 1
        if not self.converted:
            return ep
        # The conversions back that only blocked ops read go.
        for node in made_from:
            if node.users:
                self.from_blocked += 1
            else:
                graph.erase_node(node)
        self.to_blocked = len(made_to)
        inputs.remove_unused()
        return inputs.program()

    def _conv(self, graph: torch.fx.Graph, inputs: LiftedConstants, node: torch.fx.Node,
              blocked: dict, made_to: list) -> torch.fx.Node:
        x, w, b, stride, padding, residual, lo, hi, plain = self._conv_args(inputs, node)
        xb = x if plain else self._blocked(graph, x, blocked, made_to)
        rb = None if residual is None else self._blocked(graph, residual, blocked, made_to)
        conv = graph.call_function(to_edge_op(ember_fused.ops.conv2d_nchw16c.default),
                                   (xb, w, b, stride, padding, rb, lo, hi))
        conv.meta["val"] = self._fake(ember_fused.conv2d_nchw16c, _val(xb), _val(w), _val(b),
                                      stride, padding, _val(rb), lo, hi)
        return conv

    def _pool(self, graph: torch.fx.Graph, node: torch.fx.Node, blocked: dict,
              made_to: list) -> torch.fx.Node:
        x, kernel_size, stride, padding, _, ceil_mode = self._pool_args(node)
        xb = self._blocked(graph, x, blocked, made_to)
        pool = graph.call_function(to_edge_op(ember_fused.ops.max_pool2d_nchw16c.default),
                                   (xb, kernel_size, stride, padding, ceil_mode))
        pool.meta["val"] = self._fake(ember_fused.max_pool2d_nchw16c, _val(xb), kernel_size,
                                      stride, padding, ceil_mode)
        return pool

    def _fake(self, fn: Any, *args: Any) -> torch.Tensor:
        with self._mode:
            return fn(*args)

    def _blocked(self, graph: torch.fx.Graph, value: torch.fx.Node,
                 blocked: dict[torch.fx.Node, torch.fx.Node],
                 made_to: list[torch.fx.Node]) -> torch.fx.Node:
        """The blocked form of ``value``: the blocked op that made it, or one
        ``to_nchw16c`` right after it, shared by every reader."""
        if value in blocked:
            return blocked[value]
        anchor = value
        if value.op == "placeholder":  # after the last input, not among them
            anchor = next(n for n in graph.nodes if n.op != "placeholder").prev
        with graph.inserting_after(anchor):
            node = graph.call_function(to_edge_op(ember_fused.ops.to_nchw16c.default), (value,))
        node.meta = {"val": self._fake(ember_fused.to_nchw16c, _val(value))}
        blocked[value] = node
        made_to.append(node)
        return node

    def _choose(self, candidates: dict[torch.fx.Node, _Candidate]) -> set[torch.fx.Node]:
        """The nodes that go blocked (the cost model above)."""
        def conversions(chosen: set[torch.fx.Node]) -> int:
            to_values = {v for c in chosen for v in candidates[c].blocked_inputs
                         if v not in chosen}
            # A chosen node read by anything but a chosen node's blocked input.
            back = {c for c in chosen
                    if any(u not in chosen or c not in candidates[u].blocked_inputs
                           for u in c.users)}
            return sum(_size(v) for v in to_values | back)

        def score(chosen: set[torch.fx.Node]) -> float:
            return sum(candidates[c].saving for c in chosen) - conversions(chosen)

        def improve(chosen: set[torch.fx.Node]) -> set[torch.fx.Node]:
            # Add or drop one node at a time while that raises the score.
            best = score(chosen)
            changed = True
            while changed:
                changed = False
                for node in candidates:
                    trial = chosen ^ {node}
                    if (value := score(trial)) > best:
                        chosen, best, changed = trial, value, True
            return chosen

        # From none (large layers join first) and from all (a chain of smaller
        # layers pays its two layout changes together): the better of the two.
        grown, pruned = improve(set()), improve(set(candidates))
        return grown if score(grown) >= score(pruned) else pruned

    def _candidate(self, inputs: LiftedConstants, node: torch.fx.Node) -> _Candidate | None:
        conv = self._conv_args(inputs, node)
        if conv is not None:
            x, w, _, _, _, residual, _, _, plain = conv
            weight = _val(w)
            macs = _size(node) * weight.shape[1] * weight.shape[2] * weight.shape[3]
            blocked_inputs = ([] if plain else [x]) + ([] if residual is None else [residual])
            return _Candidate("conv", blocked_inputs, macs / self.macs_per_converted_value)
        pool = self._pool_args(node)
        if pool is not None:
            # About one layout change's worth faster than the NCHW pool.
            return _Candidate("pool", [pool[0]], float(_size(node)))
        return None

    @staticmethod
    def _pool_args(node: torch.fx.Node) -> tuple | None:
        """(x, kernel_size, stride, padding, dilation, ceil_mode) of a 2-D
        float32 max pool the blocked kernel takes, else None."""
        if not calls_op(node, _POOL):
            return None
        names = ("stride", "padding", "dilation", "ceil_mode")
        defaults = ([], [0], [1], False)
        rest = list(node.args[2:]) + [node.kwargs.get(k, d) for k, d in
                                      zip(names, defaults, strict=True)][len(node.args) - 2:]
        x, kernel_size = node.args[:2]
        stride, padding, dilation, ceil_mode = rest
        x_val = _val(x)
        if x_val is None or x_val.dim() != 4 or x_val.dtype != torch.float32:
            return None
        kernel_size = _pair(kernel_size)
        stride = _pair(stride) if len(stride) else list(kernel_size)
        padding, dilation = _pair(padding), _pair(dilation)
        if any(d != 1 for d in dilation) or len(kernel_size) != 2:
            return None
        return x, kernel_size, stride, padding, dilation, bool(ceil_mode)

    @staticmethod
    def _conv_args(inputs: LiftedConstants, node: torch.fx.Node) -> tuple | None:
        """(x, weight, bias, stride, padding, residual, min, max, plain) of a
        convolution the blocked kernel takes (plain: it reads its NCHW input
        of fewer than 16 channels as it is), else None."""
        if calls_op(node, _FUSED_CONV):
            x, w, b, stride, padding, dilation, groups, residual, lo, hi = node.args
        elif calls_op(node, _CONV):
            x, w, b, stride, padding, dilation, transposed, output_padding, groups = node.args
            if transposed or any(output_padding):
                return None
            residual = lo = hi = None
        else:
            return None
        x_val, out, w_val = _val(x), _val(node), _val(w)
        if x_val is None or out is None or w_val is None or out.dim() != 4 \
                or x_val.dtype != torch.float32 or out.dtype != torch.float32 \
                or w_val.dtype != torch.float32 or groups != 1:
            return None
        if not isinstance(w, torch.fx.Node) or inputs.value(w) is None:
            return None  # The kernel packs a constant weight at load.
        if b is not None and (not isinstance(b, torch.fx.Node) or inputs.value(b) is None):
            return None
        cout, cin = w_val.shape[:2]
        plain = cin < _BLOCK
        if cout % _BLOCK or (cin % _BLOCK and not plain):
            return None
        stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
        if any(d != 1 for d in dilation) or any(s not in (1, 2) for s in stride):
            return None
        if not all(isinstance(v, int) for v in (*stride, *padding)):
            return None
        return x, w, b, stride, padding, residual, lo, hi, plain


def _pair(values: Any) -> list:
    """A 2-D op's int list with one value for both dims, as two."""
    return list(values) * (2 if len(values) == 1 else 1)


def _size(node: Any) -> int:
    """Elements of a node's value (a large layer's when its size is dynamic)."""
    val = _val(node)
    n = val.numel() if val is not None else 0
    return n if isinstance(n, int) else 1 << 20
