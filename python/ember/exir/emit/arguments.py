"""Emit one operator argument (scalar, list, enum, tensor reference) as a value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ember.exir.emit.enums import enum_number
from ember.exir.emit.values import ValueTable

TensorIndex = Callable[[torch.fx.Node], Any]


def _element_type(t: Any) -> Any:
    if isinstance(t, torch.OptionalType):
        t = t.getElementType()
    return t.getElementType() if isinstance(t, torch.ListType) else None


def _is_optional_tensor(t: Any) -> bool:
    return isinstance(t, torch.OptionalType) and isinstance(t.getElementType(), torch.TensorType)


def _emit_list(table: ValueTable, arg_type: Any, items: list[Any], index_of: TensorIndex) -> int:
    elem = _element_type(arg_type)
    if isinstance(elem, (torch.IntType, torch.SymIntType)) and any(
        isinstance(x, torch.fx.Node) for x in items
    ):  # symbolic sizes: the nodes are Int values computed at run time
        return table.int_list_of_values(
            [index_of(x) if isinstance(x, torch.fx.Node) else table.int(x) for x in items]
        )
    if _is_optional_tensor(elem):
        return table.optional_tensor_list([-1 if x is None else index_of(x) for x in items])
    if isinstance(elem, torch.TensorType) or any(isinstance(x, torch.fx.Node) for x in items):
        return table.tensor_list([index_of(x) for x in items])
    if isinstance(elem, torch.BoolType) or (items and all(isinstance(x, bool) for x in items)):
        return table.bool_list(items)
    if isinstance(elem, (torch.IntType, torch.SymIntType)):
        return table.int_list(items)
    if isinstance(elem, torch.FloatType) or any(isinstance(x, float) for x in items):
        return table.double_list(items)
    return table.int_list(items)


def emit_argument(table: ValueTable, arg_type: Any, value: Any, index_of: TensorIndex) -> int:
    """The value index of one argument; ``index_of`` maps tensor nodes."""
    if isinstance(value, torch.fx.Node):
        return index_of(value)
    if value is None or isinstance(value, torch.device):
        return table.null()
    if isinstance(value, bool):
        return table.bool(value)
    if isinstance(value, int):
        return table.int(value)
    if isinstance(value, float):
        return table.double(value)
    if isinstance(value, str):
        return table.string(value)
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
        return table.int(enum_number(value))
    if isinstance(value, (list, tuple)):
        return _emit_list(table, arg_type, list(value), index_of)
    raise NotImplementedError(f"cannot emit an argument of type {type(value).__name__}: {value!r}")
