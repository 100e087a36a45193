"""Input guards: the checks of ``dynamic_shapes`` that ``set_input`` cannot make.

``set_input`` already refuses a size above its bound (the planned size). What
it cannot see is a relation between inputs or a lower bound: ``x`` and ``y``
share ``Dim("dim1_x", min=1, max=10)``, so ``x.shape[1] == y.shape[1]`` and
both are ``>= 1``. Other exporters strip guard instructions from the program
(other runtimes have no ``aten::_assert_scalar`` kernel), so Ember writes these
checks beside it, as a guard table in the named data entry
``ember.input_guards/<method>`` (format: ``runtime/executor/input_guards.h``),
which other runtimes ignore. Ember's runtime checks them at the start of
``execute()`` with the message given here, naming the inputs, dimensions and
the constraint; nothing has run yet, so the next good call works.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import sympy
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.utils._sympy.functions import FloorDiv, Mod

from ember.exir.symbolic import dim_name, expr_of

KEY_PREFIX = "ember.input_guards/"

CONST, DIM, ADD, MUL, FLOORDIV, MOD, EQ, GE = range(1, 9)
_BINARY = {sympy.Add: ADD, sympy.Mul: MUL, FloorDiv: FLOORDIV, Mod: MOD}

Op = tuple[int, int, int]


@dataclass
class InputGuard:
    """A postfix program over input sizes (non-zero: the inputs pass) and the
    message the runtime fails with otherwise."""

    ops: list[Op]
    message: str


class _Guards:
    def __init__(self, ep: ExportedProgram, method: str) -> None:
        self.ranges = dict(ep.range_constraints)
        self.method = method
        self.symbols: dict[sympy.Symbol, tuple[Op, str]] = {}
        self.guards: list[InputGuard] = []

    def check(self, ops: list[Op], message: str) -> None:
        self.guards.append(InputGuard(ops, f"method '{self.method}': {message}"))

    def build(self, expr: sympy.Expr) -> list[Op] | None:
        """Ops pushing ``expr`` of the defined symbols; None if unsupported."""
        if isinstance(expr, sympy.Integer):
            return [(CONST, int(expr), 0)]
        if isinstance(expr, sympy.Symbol):
            return [self.symbols[expr][0]] if expr in self.symbols else None
        code = next((c for t, c in _BINARY.items() if isinstance(expr, t)), None)
        if code is None:
            return None
        args = [self.build(a) for a in expr.args]
        if any(a is None for a in args):
            return None
        ops = list(args[0])
        for a in args[1:]:
            ops += [*a, (code, 0, 0)]
        return ops

    def add(self, inputs: list[tuple[int, torch.fx.Node]]) -> None:
        dims = [
            (i, ph, d, s)
            for i, ph in inputs
            for d, s in enumerate(ph.meta["val"].shape)
            if not isinstance(expr_of(s), sympy.Integer)
        ]
        # First the plain symbols: the first input dim of each defines it.
        for i, ph, d, s in dims:
            sym = expr_of(s)
            if isinstance(sym, sympy.Symbol) and sym not in self.symbols:
                where = f"input {i} ('{ph.name}') dim {d}"
                self.symbols[sym] = ((DIM, i, d), where)
                self.lower_bound(sym, (DIM, i, d), where, ph.meta["val"])
        for i, ph, d, s in dims:
            expr = expr_of(s)
            defined = self.symbols.get(expr) if isinstance(expr, sympy.Symbol) else None
            if defined is not None and defined[0] == (DIM, i, d):
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
            self.check(
                [(DIM, i, d), *expected, (EQ, 0, 0)],
                f"input {i} ('{ph.name}') dim {d} must equal {what}: "
                "the equality constraint of dynamic_shapes is broken",
            )

    def lower_bound(self, sym: sympy.Symbol, size: Op, where: str, val: torch.Tensor) -> None:
        vr = self.ranges.get(sym)
        if vr is None or not isinstance(vr.lower, sympy.Integer) or int(vr.lower) <= 0:
            return
        lower = int(vr.lower)
        name = dim_name(sym, val) or str(sym)
        self.check(
            [size, (CONST, lower, 0), (GE, 0, 0)],
            f"{where} is below its minimum {lower} (Dim '{name}' has range "
            f"[{lower}, {vr.upper}])",
        )


def input_guards(ep: ExportedProgram, method: str) -> list[InputGuard]:
    """The guards of ``ep``'s dynamic tensor inputs (empty for static shapes)."""
    user = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    inputs = [
        (i, ph)
        for i, ph in enumerate(p for p in placeholders if p.name in user)
        if isinstance(ph.meta.get("val"), torch.Tensor)
    ]
    guards = _Guards(ep, method)
    guards.add(inputs)
    return guards.guards


def encode_guard_table(guards: list[InputGuard]) -> bytes:
    """The guard table's bytes (little-endian int64 words, messages padded to 8)."""
    out = bytearray(struct.pack("<qq", 1, len(guards)))
    for g in guards:
        out += struct.pack("<q", len(g.ops))
        for op in g.ops:
            out += struct.pack("<qqq", *op)
        message = g.message.encode()
        out += struct.pack("<q", len(message)) + message + b"\0" * (-len(message) % 8)
    return bytes(out)
