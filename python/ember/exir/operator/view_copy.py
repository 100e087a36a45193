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


@functools.cache
def view_of_copy(op: OpOverload) -> OpOverload | None:
    """``aten.view_copy.default`` -> ``aten.view.default``; None for other ops."""
    name = op.overloadpacket.__name__
    if not name.endswith("_copy"):
        return None
    packet = getattr(getattr(torch.ops, op.namespace), name[: -len("_copy")], None)
    if packet is None or op._overloadname not in packet.overloads():
        return None
    view = getattr(packet, op._overloadname)
    if torch.Tag.view_copy not in op.tags and view_copy_of(view) is not op:
        return None
    return view


def fake_call(target: object, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
    """Call ``target`` on fake values. A ``*_copy`` view op runs as its view
    followed by a contiguous clone: same result, but the fake kernels of some
    ``*_copy`` ops turn symbolic sizes into ints (``permute_copy``,
    ``select_copy``) or refuse them (``expand_copy``, ``slice_copy``)."""
    # An edge op wraps its ATen overload in ``.op`` (an OpOverload's own
    # ``.op`` is its C function).
    op = target if isinstance(target, OpOverload) else getattr(target, "op", target)
    if isinstance(op, OpOverload):
        view = view_of_copy(op)
        if view is not None:
            with torch.no_grad():  # autograd's view tracking would guard on sizes
                result = view(*args, **kwargs)
            if isinstance(result, torch.Tensor):
                return result.clone(memory_format=torch.contiguous_format)
            return [r.clone(memory_format=torch.contiguous_format) for r in result]
    return target(*args, **kwargs)  # type: ignore[operator]
