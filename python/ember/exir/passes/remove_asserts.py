"""Drop runtime assertion ops (``aten._assert_tensor_metadata`` and friends).

They return nothing and nothing uses them; the runtime checks inputs itself.
"""

from __future__ import annotations

import torch
from torch._ops import OpOverload


def _is_dead_assertion(node: torch.fx.Node) -> bool:
    op = node.target
    return (
        node.op == "call_function"
        and isinstance(op, OpOverload)
        and not node.users
        and len(op._schema.returns) == 0
        and not op._schema.is_mutable
    )


def remove_asserts(gm: torch.fx.GraphModule) -> None:
    """Remove dead assertion nodes from ``gm`` in place."""
    for node in list(gm.graph.nodes):
        if _is_dead_assertion(node):
            gm.graph.erase_node(node)
    gm.recompile()
