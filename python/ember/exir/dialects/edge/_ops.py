"""Edge operators: thin wrappers around ATen ``OpOverload`` objects.

An edge op has its own identity (it is not ``torch.ops.aten.X``) so that a
graph says which dialect it is in. Its ``__module__`` and ``__name__`` make
FX print it as ``ember_exir_dialects_edge__ops_aten_relu_default(...)`` and
name its nodes ``aten_relu_default``.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch._ops import OpOverload, OpOverloadPacket


class EdgeOpOverload:
    """One overload of an operator in the edge dialect."""

    __module__ = __name__

    def __init__(self, op: OpOverload) -> None:
        self._op = op
        self.__name__ = f"{op.namespace}.{op._schema.name.split('::')[1]}.{op._overloadname}"
        self.__qualname__ = self.__name__

    @property
    def op(self) -> OpOverload:
        """The ATen overload this edge op stands for."""
        return self._op

    @property
    def _schema(self) -> torch._C.FunctionSchema:
        return self._op._schema

    @property
    def namespace(self) -> str:
        return self._op.namespace

    @property
    def _overloadname(self) -> str:
        return self._op._overloadname

    @property
    def tags(self) -> list[torch.Tag]:
        return list(self._op.tags)

    def name(self) -> str:
        return self._op.name()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._op(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EdgeOpOverload) and other._op is self._op

    def __hash__(self) -> int:
        return hash(("edge", self._op))

    def __repr__(self) -> str:
        return f"<EdgeOpOverload: {self.__name__}>"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (to_edge_op, (self._op,))

    def __deepcopy__(self, memo: dict[int, Any]) -> EdgeOpOverload:
        return self


class EdgeOpOverloadPacket:
    """All overloads of one edge operator: ``ops.edge.aten.add.Tensor``."""

    def __init__(self, packet: OpOverloadPacket) -> None:
        self._packet = packet

    def __getattr__(self, overload: str) -> EdgeOpOverload:
        if overload.startswith("__"):
            raise AttributeError(overload)
        return to_edge_op(getattr(self._packet, overload))

    def overloads(self) -> list[str]:
        return self._packet.overloads()

    def __repr__(self) -> str:
        return f"<EdgeOpOverloadPacket: {self._packet}>"


@functools.cache
def to_edge_op(op: OpOverload) -> EdgeOpOverload:
    """The edge op for an ATen (or other namespace) overload; one object each."""
    return EdgeOpOverload(op)


def calls_op(node: Any, op: OpOverload) -> bool:
    """True when ``node`` is an FX call of ``op``, as an edge op or a plain overload."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return False
    target = node.target.op if isinstance(node.target, EdgeOpOverload) else node.target
    return target is op
