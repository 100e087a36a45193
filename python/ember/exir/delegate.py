"""The delegate-call operator: ``torch.ops.higher_order.executorch_call_delegate``.

PyTorch itself defines this higher-order operator
(``torch._higher_order_ops.executorch_call_delegate``) with eager, fake
tensor, functionalization, autograd and proxy (export) support: eager and
fake calls run the lowered module's ``original_module``; tracing adds the
module to the traced root as ``lowered_module_<n>`` and records a call
node. Importing this module makes sure it is registered; Ember never
re-implements it.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._higher_order_ops.executorch_call_delegate import (
    executorch_call_delegate,
    is_lowered_module,
)

__all__ = ["executorch_call_delegate", "is_delegate_call", "is_lowered_module"]


def is_delegate_call(node: Any) -> bool:
    """True for an ``executorch_call_delegate`` call node."""
    return (
        isinstance(node, torch.fx.Node)
        and node.op == "call_function"
        and node.target is executorch_call_delegate
    )
