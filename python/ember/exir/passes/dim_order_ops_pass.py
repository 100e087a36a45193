"""Memory-format copies as dim-order ops, as other exporters of the format
write them: ``aten._to_copy.out`` -> ``dim_order_ops._to_dim_order_copy.out``
and ``aten.clone.out`` -> ``dim_order_ops._clone_dim_order.out``.

Runs on the out-variant graph, so the ``dim_order`` argument is computed from
the out tensor's value by the same function the emitter uses to write that
tensor's dim order: the argument and the planned layout agree by
construction (the kernels refuse a program where they do not). The dtype is
the out tensor's, as for ``_to_copy.out``.
"""

from __future__ import annotations

import torch

import ember.exir.operator.dim_order_ops  # noqa: F401  (defines the operators)
from ember.exir.emit.values import dim_order

_aten = torch.ops.aten
_REWRITES = {
    _aten._to_copy.out: torch.ops.dim_order_ops._to_dim_order_copy.out,
    _aten.clone.out: torch.ops.dim_order_ops._clone_dim_order.out,
}


def to_dim_order_ops(gm: torch.fx.GraphModule) -> None:
    """Rewrite ``gm``'s ``_to_copy.out`` / ``clone.out`` calls in place."""
    for node in gm.graph.nodes:
        target = _REWRITES.get(node.target) if node.op == "call_function" else None
        if target is None:
            continue
        out = node.kwargs["out"]
        non_blocking = bool(node.kwargs.get("non_blocking", False))
        node.target = target
        node.args = (node.args[0],)
        node.kwargs = {
            "non_blocking": non_blocking,
            "dim_order": dim_order(out.meta["val"]),
            "out": out,
        }
    gm.recompile()
