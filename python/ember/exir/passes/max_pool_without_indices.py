"""2-D max pooling without the indices nobody reads.

``max_pool2d`` exports as ``max_pool2d_with_indices``, whose out variant
writes an int64 index per output next to the value: on ResNet-50's first pool
([1, 64, 56, 56]) 1.6 MB of indices against 0.8 MB of float values (0.2 MB of
int8 ones in a quantized program), and a kernel loop that carries the
positions along. When nothing reads the indices (no ``getitem(pool, 1)``
with users; inference graphs), the pass rewrites ``getitem(pool, 0)`` to
``ember_fused::max_pool2d`` (``ember.exir.operator.ember_fused``), the same
kernel without the positions (``kernels/portable/op_max_pool.cpp``).
``ExecutorchBackendConfig(max_pool_without_indices=False)`` keeps the aten
op (a program other runtimes of the format can run).
"""

from __future__ import annotations

import operator

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.exported import copy_graph_module, rebuild
from ember.exir.operator import ember_fused

_POOL = torch.ops.aten.max_pool2d_with_indices.default
_DEFAULTS = ([], [0], [1], False)  # stride, padding, dilation, ceil_mode


class MaxPoolWithoutIndicesPass:
    """``MaxPoolWithoutIndicesPass()(ep)`` returns the program with every 2-D
    max pool whose indices are unread rewritten; ``ep`` is not changed.
    ``rewritten`` counts them in the last call."""

    def __init__(self) -> None:
        self.rewritten = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.rewritten = 0
        gm = copy_graph_module(ep.graph_module)
        for node in list(gm.graph.nodes):
            if calls_op(node, _POOL):
                self._rewrite(gm.graph, node)
        if self.rewritten == 0:
            return ep
        gm.recompile()
        return rebuild(ep, gm, verifier=ep.verifiers[0])

    def _rewrite(self, graph: torch.fx.Graph, pool: torch.fx.Node) -> None:
        values = None
        for user in list(pool.users):
            if user.target is not operator.getitem:
                return  # Read whole (a tuple output, say): keep it.
            if user.args[1] == 0:
                if values is not None:
                    return
                values = user
            elif user.users:
                return  # The indices are read.
        if values is None:
            return
        args = list(pool.args) + [pool.kwargs.get(name, default) for name, default in zip(
            ("stride", "padding", "dilation", "ceil_mode")[len(pool.args) - 2:],
            _DEFAULTS[len(pool.args) - 2:], strict=True)]
        with graph.inserting_before(values):
            new = graph.call_function(to_edge_op(ember_fused.ops.max_pool2d.default), tuple(args))
        new.meta = dict(pool.meta)  # The pool's source line and name.
        new.meta["val"] = values.meta["val"]
        values.replace_all_uses_with(new)
        for user in list(pool.users):
            graph.erase_node(user)
        graph.erase_node(pool)
        self.rewritten += 1
