"""Bind FX call arguments to an operator schema by name, and back."""

from __future__ import annotations

from typing import Any

import torch

_MISSING = object()


def bind(
    schema: torch._C.FunctionSchema, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Map argument names to the values given in a call (defaults not filled)."""
    bound: dict[str, Any] = {}
    for arg, value in zip(schema.arguments, args, strict=False):
        bound[arg.name] = value
    for name, value in kwargs.items():
        bound[name] = value
    return bound


def unbind(
    schema: torch._C.FunctionSchema, bound: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Turn named values into (args, kwargs) for ``schema``: positional while
    the schema allows and no earlier positional argument is missing."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True
    for arg in schema.arguments:
        value = bound.get(arg.name, _MISSING)
        if value is _MISSING:
            positional = False
            continue
        if positional and not arg.kwarg_only:
            args.append(value)
        else:
            kwargs[arg.name] = value
    unknown = set(bound) - {a.name for a in schema.arguments}
    if unknown:
        raise ValueError(f"{schema.name}: unknown arguments {sorted(unknown)}")
    return tuple(args), kwargs


def with_defaults(
    schema: torch._C.FunctionSchema, bound: dict[str, Any]
) -> list[tuple[torch._C.Argument, Any]]:
    """Every schema argument in order, with its value or its default."""
    out = []
    for arg in schema.arguments:
        if arg.name in bound:
            out.append((arg, bound[arg.name]))
        elif arg.has_default_value():
            out.append((arg, arg.default_value))
        elif arg.type.kind() == "OptionalType":
            out.append((arg, None))
        else:
            raise ValueError(f"{schema.name}: missing argument '{arg.name}'")
    return out


def is_out_argument(arg: torch._C.Argument) -> bool:
    return bool(arg.kwarg_only and arg.alias_info is not None and arg.alias_info.is_write)


def out_argument_names(op: Any) -> list[str]:
    """The names of an out-variant op's ``out`` arguments, in schema order."""
    return [a.name for a in op._schema.arguments if is_out_argument(a)]
