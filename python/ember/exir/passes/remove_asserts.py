"""Drop runtime assertion ops (``aten._assert_tensor_metadata`` and friends).

They return nothing and nothing uses them; the runtime checks inputs itself.
What only fed them goes too: the symbolic comparisons (``u0 >= 0``) and the
``sym_storage_offset`` reads export adds to check a view's offset is not
negative (``tensor_split`` by a tensor of indices). Ember's views are copies
with offset 0, so nothing else could read a meaningful offset: a
``sym_storage_offset`` something else uses is kept (the runtime has no kernel
for it and ``load_method`` names it) rather than replaced by a made-up value.
"""

from __future__ import annotations

import operator

import torch
from torch._ops import OpOverload

# Pure symbolic arithmetic and comparisons export writes as Python operators.
_SYMBOLIC = frozenset({operator.lt, operator.le, operator.eq, operator.ne, operator.ge,
                       operator.gt, operator.and_, operator.or_, operator.not_, operator.add,
                       operator.sub, operator.mul, operator.floordiv, operator.mod,
                       operator.neg, operator.truediv, operator.pow})


def _is_dead_assertion(node: torch.fx.Node) -> bool:
    op = node.target
    return (
        node.op == "call_function"
        and isinstance(op, OpOverload)
        and not node.users
        and len(op._schema.returns) == 0
        and not op._schema.is_mutable
    )


def _is_dead_check_input(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and not node.users and (
        node.target is torch.ops.aten.sym_storage_offset.default
        or node.target in _SYMBOLIC
    )


def remove_asserts(gm: torch.fx.GraphModule) -> None:
    """Remove dead assertion nodes from ``gm`` in place, then the dead symbolic
    comparisons and storage-offset reads that fed them."""
    for node in list(gm.graph.nodes):
        if _is_dead_assertion(node):
            gm.graph.erase_node(node)
    for node in reversed(list(gm.graph.nodes)):
        if _is_dead_check_input(node):
            gm.graph.erase_node(node)
    gm.recompile()
