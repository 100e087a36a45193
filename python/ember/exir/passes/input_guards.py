"""Input guards: check at run time what ``dynamic_shapes`` promised.

``set_input`` already refuses a size above its bound (the planned size). What
it cannot see is a relation between inputs or a lower bound: ``x`` and ``y``
share ``Dim("dim1_x", min=1, max=10)``, so ``x.shape[1] == y.shape[1]`` and
both are ``>= 1``. This pass puts, right after the placeholders, one
``sym_size.int`` per dynamic input dimension and, per constraint, a
comparison and an ``aten._assert_scalar(cond, message)`` whose message names
the inputs, the dimensions and the constraint. The runtime fails the method
with that message; nothing has run yet, so the next good call works.
"""

from __future__ import annotations

import operator
from typing import Any

import sympy
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.utils._sympy.functions import FloorDiv, Mod

from ember.exir.symbolic import dim_name, expr_of

_aten = torch.ops.aten


class _Guards:
    def __init__(self, gm: torch.fx.GraphModule, ep: ExportedProgram, method: str) -> None:
        self.gm = gm
        self.graph = gm.graph
        self.ranges = dict(ep.range_constraints)
        self.method = method
        self.symbols: dict[sympy.Symbol, tuple[torch.fx.Node, str]] = {}

    def node(self, target: Any, args: tuple[Any, ...], val: Any) -> torch.fx.Node:
        n = self.graph.call_function(target, args)
        n.meta["val"] = val
        return n

    def check(self, cond: torch.fx.Node, message: str) -> None:
        self.node(_aten._assert_scalar.default, (cond, f"method '{self.method}': {message}"), None)

    def build(self, expr: sympy.Expr) -> Any:
        """A node (or int) computing ``expr`` from the defined symbols; None if unsupported."""
        if isinstance(expr, sympy.Integer):
            return int(expr)
        if isinstance(expr, sympy.Symbol):
            return self.symbols[expr][0] if expr in self.symbols else None
        ops = {sympy.Add: operator.add, sympy.Mul: operator.mul, FloorDiv: operator.floordiv,
               Mod: operator.mod}
        op = next((o for t, o in ops.items() if isinstance(expr, t)), None)
        if op is None:
            return None
        args = [self.build(a) for a in expr.args]
        if any(a is None for a in args):
            return None
        result = args[0]
        for a in args[1:]:
            result = self.node(op, (result, a), 0)
        return result

    def add(self, inputs: list[tuple[int, torch.fx.Node]]) -> None:
        dims = [
            (i, ph, d, s)
            for i, ph in inputs
            for d, s in enumerate(ph.meta["val"].shape)
            if not isinstance(expr_of(s), sympy.Integer)
        ]
        # First the plain symbols: the first input dim of each defines it.
        sizes: dict[tuple[int, int], torch.fx.Node] = {}
        for i, ph, d, s in dims:
            size = self.node(_aten.sym_size.int, (ph, d), s)
            sizes[(i, d)] = size
            sym = expr_of(s)
            if isinstance(sym, sympy.Symbol) and sym not in self.symbols:
                where = f"input {i} ('{ph.name}') dim {d}"
                self.symbols[sym] = (size, where)
                self.lower_bound(sym, size, where, ph.meta["val"])
        for i, ph, d, s in dims:
            expr = expr_of(s)
            defined = self.symbols.get(expr) if isinstance(expr, sympy.Symbol) else None
            if defined is not None and defined[0] is sizes[(i, d)]:
                continue
            expected = self.build(expr)
            if expected is None:
                continue  # an expression we cannot compute: only the bound is checked
            name = dim_name(expr, ph.meta["val"]) if isinstance(expr, sympy.Symbol) else None
            if defined is not None:
                what = f"{defined[1]} (both are Dim '{name or expr}')"
            else:
                what = f"{expr}, from " + ", ".join(
                    self.symbols[s][1] for s in sorted(expr.free_symbols, key=str)
                )
            eq = self.node(operator.eq, (sizes[(i, d)], expected), True)
            self.check(
                eq,
                f"input {i} ('{ph.name}') dim {d} must equal {what}: "
                "the equality constraint of dynamic_shapes is broken",
            )

    def lower_bound(self, sym: sympy.Symbol, size: torch.fx.Node, where: str, val: Any) -> None:
        vr = self.ranges.get(sym)
        if vr is None or not isinstance(vr.lower, sympy.Integer) or int(vr.lower) <= 0:
            return
        lower = int(vr.lower)
        ge = self.node(operator.ge, (size, lower), True)
        name = dim_name(sym, val) or str(sym)
        self.check(
            ge,
            f"{where} is below its minimum {lower} (Dim '{name}' has range "
            f"[{lower}, {vr.upper}])",
        )


def add_input_guards(gm: torch.fx.GraphModule, ep: ExportedProgram, method: str) -> None:
    """Insert the guards of ``ep``'s dynamic inputs into ``gm`` (its graph
    module or a copy of it), in place, after the last placeholder."""
    user = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    inputs = [
        (i, ph)
        for i, ph in enumerate(p for p in placeholders if p.name in user)
        if isinstance(ph.meta.get("val"), torch.Tensor)
    ]
    if not placeholders:
        return
    first = placeholders[-1].next
    with gm.graph.inserting_before(first):
        _Guards(gm, ep, method).add(inputs)
    gm.recompile()
