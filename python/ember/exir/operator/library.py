"""Defining one of Ember's op namespaces (``ember_quantized``, ``ember_fused``)
with torch.library: each op's schema, its eager implementation (the
reference the runtime's kernel is tested against) and an out variant that
computes it and copies the result into ``out``."""

from __future__ import annotations

from collections.abc import Callable

import torch

_LIBRARIES: list[torch.library.Library] = []  # Keeps the registrations alive.


def _out_variant(fn: Callable) -> Callable:
    def impl(*args, out):
        result = fn(*args)
        out.resize_(result.shape).copy_(result)
        return out
    return impl


def define_ops(namespace: str, schemas: dict[str, str], functions: dict[str, Callable]) -> None:
    """Defines ``namespace::name`` for every schema (``name`` and
    ``name.out``) and implements each function and its out variant; a second
    call (a module imported again) does nothing."""
    first = next(iter(functions))
    try:
        getattr(getattr(torch.ops, namespace), first).default  # noqa: B018
        return  # Already defined.
    except (AttributeError, RuntimeError):
        pass
    lib = torch.library.Library(namespace, "DEF")
    for name, schema in schemas.items():
        lib.define(f"{name}{schema}")
    for name, fn in functions.items():
        lib.impl(name, fn, "CompositeExplicitAutograd")
        lib.impl(f"{name}.out", _out_variant(fn), "CompositeExplicitAutograd")
    _LIBRARIES.append(lib)
