"""Small helpers the fusion passes match graph patterns with: which op a node
calls, its only reader, its tensor value, and a number given as a Python
scalar or a lifted one-element constant."""

from __future__ import annotations

from typing import Any

import torch

from ember.exir.dialects.edge._ops import calls_op
from ember.exir.lifted_constants import LiftedConstants


def calls_any(node: Any, ops: tuple) -> bool:
    """True when ``node`` is a graph node calling one of ``ops`` (aten or edge)."""
    return isinstance(node, torch.fx.Node) and any(calls_op(node, op) for op in ops)


def only_user(node: torch.fx.Node) -> torch.fx.Node | None:
    """The one node that reads ``node``, or None (no reader, or several)."""
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def tensor_val(node: Any) -> torch.Tensor | None:
    """The (fake) tensor a node computes, from its ``val`` meta; else None."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def scalar_of(arg: Any, constants: LiftedConstants) -> float | None:
    """``arg`` as a float when it is a number or a one-element constant
    tensor of the program (``to_edge`` lifts scalars to those); else None."""
    if isinstance(arg, bool):
        return None
    if isinstance(arg, (int, float)):
        return float(arg)
    if isinstance(arg, torch.fx.Node):
        data = constants.value(arg)
        if data is not None and data.numel() == 1:
            return float(data.reshape(()))
    return None
