"""Symbolic shapes of an exported program: upper bounds and names.

``torch.export`` with ``dynamic_shapes`` gives tensors sizes that are SymInts
(``s0``, ``2*s0``) and the program ``range_constraints`` (``s0: [1, 10]``).
Ember plans memory for the upper bound of every size (``bound_sympy`` over
those ranges) and marks such tensors DYNAMIC_BOUND; see docs/dynamic-shapes.md.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch
from torch.export import ExportedProgram
from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

# Sizes are int32 in the file.
_MAX_SIZE = 2**31 - 1


class UnboundedShapeError(ValueError):
    """A dynamic dimension has no finite upper bound, so no memory can be planned."""


def expr_of(size: Any) -> sympy.Expr:
    """The sympy expression of a size (an int or a SymInt)."""
    if isinstance(size, torch.SymInt):
        return size.node.expr
    return sympy.Integer(int(size))


def is_symbolic(val: Any) -> bool:
    """True for a tensor whose shape has a size that is not a plain int."""
    return isinstance(val, torch.Tensor) and any(
        isinstance(s, torch.SymInt) and not isinstance(expr_of(s), sympy.Integer)
        for s in val.shape
    )


def dim_name(sym: sympy.Symbol, val: Any = None) -> str | None:
    """The name the user gave the ``Dim`` of ``sym`` (``"dim1_x"``), if known."""
    shape_env = None
    if isinstance(val, torch.Tensor):
        for s in val.shape:
            if isinstance(s, torch.SymInt):
                shape_env = s.node.shape_env
                break
    if shape_env is None:
        return None
    names = getattr(shape_env, "source_name_to_debug_name", {})
    for source in getattr(shape_env, "var_to_sources", {}).get(sym, []):
        name = source.name() if callable(source.name) else source.name
        if name in names:
            return names[name]
    return None


class SymbolBounds:
    """Upper bounds of the symbolic sizes of one method (from ``ep.range_constraints``)."""

    def __init__(self, ep: ExportedProgram, method: str = "forward") -> None:
        self.method = method
        self.ranges: dict[sympy.Symbol, ValueRanges] = dict(ep.range_constraints)

    def range_of(self, sym: sympy.Symbol) -> ValueRanges:
        return self.ranges.get(sym, ValueRanges.unknown_int())

    def upper(self, size: Any, what: str = "a size") -> int:
        """The largest value ``size`` can take; raises UnboundedShapeError when
        it has none (a ``Dim`` without ``max``)."""
        expr = expr_of(size)
        if isinstance(expr, sympy.Integer):
            return int(expr)
        ranges = self.ranges
        missing = [s for s in expr.free_symbols if s not in ranges]
        if missing and isinstance(size, torch.SymInt):
            # A data-dependent size (nonzero's row count) re-traced by the passes
            # gets a fresh symbol the program's range_constraints do not list; its
            # shape environment still knows the range export gave it (<= numel).
            known = getattr(size.node.shape_env, "var_to_range", {})
            ranges = {**{s: known[s] for s in missing if s in known}, **ranges}
        upper = bound_sympy(expr, ranges).upper
        if not isinstance(upper, sympy.Integer) or int(upper) > _MAX_SIZE:
            syms = ", ".join(sorted(str(s) for s in expr.free_symbols))
            raise UnboundedShapeError(
                f"method '{self.method}': {what} is {expr}, which has no upper bound "
                f"(ranges of {syms}: "
                + ", ".join(f"{s}: {self.range_of(s)}" for s in sorted(expr.free_symbols, key=str))
                + "). Ember plans memory for the largest shape, so every dynamic dimension "
                'needs a max: export with e.g. Dim("batch", min=1, max=64) instead of '
                'Dim("batch").'
            )
        return int(upper)

    def shape(self, val: torch.Tensor, what: str = "a tensor") -> tuple[int, ...]:
        """The upper-bound shape of a (possibly symbolic) tensor."""
        return tuple(
            self.upper(s, f"dim {d} of {what} (shape {tuple(val.shape)})")
            for d, s in enumerate(val.shape)
        )

    def nbytes(self, val: torch.Tensor, what: str = "a tensor") -> int:
        n = 1
        for s in self.shape(val, what):
            n *= s
        return n * val.element_size()
