"""Map view operators to their copying ``_copy`` twins.

The runtime has no aliasing views, so ``aten.permute.default`` becomes
``aten.permute_copy.default`` and so on for every op whose return aliases
its input and that has a ``<name>_copy`` overload of the same name.
"""

from __future__ import annotations

import functools

import torch
from torch._ops import OpOverload


def _is_view(op: OpOverload) -> bool:
    returns = op._schema.returns
    return (
        not op._schema.is_mutable
        and len(returns) > 0
        and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)
    )


@functools.cache
def view_copy_of(op: OpOverload) -> OpOverload | None:
    """``aten.view.default`` -> ``aten.view_copy.default``; None for non-views."""
    if not _is_view(op):
        return None
    name = op.overloadpacket.__name__
    packet = getattr(getattr(torch.ops, op.namespace), f"{name}_copy", None)
    if packet is None or op._overloadname not in packet.overloads():
        return None
    return getattr(packet, op._overloadname)
