"""Operations on symbolic sizes and the runtime ops that compute them.

In a graph exported with dynamic shapes, sizes are computed by
``aten.sym_size.int`` / ``aten.sym_numel`` nodes and combined by Python
operators on SymInts (``mul = 2 * sym_size``). The emitter turns each of
those into a KernelCall of the runtime's prim ops that writes an Int (or
Bool, Double) value; lists of sizes then name those values.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

# Python callable -> executorch_prim::<name>.Scalar
PRIM_SCALAR_OPS: dict[Any, str] = {
    operator.add: "add",
    operator.sub: "sub",
    operator.mul: "mul",
    operator.floordiv: "floordiv",
    operator.truediv: "truediv",
    operator.mod: "mod",
    operator.eq: "eq",
    operator.gt: "gt",
    operator.ge: "ge",
    operator.lt: "lt",
    operator.le: "le",
    operator.neg: "neg",
    math.ceil: "ceil",
    round: "round",
    math.trunc: "trunc",
    torch.sym_max: "sym_max",
    torch.sym_min: "sym_min",
    torch.sym_float: "sym_float",
    torch.sym_int: "sym_int",
    torch.sym_not: "sym_not",
    torch.sym_ite: "sym_ite",
}


def is_sym_op(target: Any) -> bool:
    """A call on symbolic scalars that the runtime computes with a prim op."""
    try:
        return target in PRIM_SCALAR_OPS
    except TypeError:  # unhashable targets
        return False


def prim_operator(target: Any) -> dict[str, str]:
    """The Operator entry (name, overload) of a symbolic-scalar call."""
    if not is_sym_op(target):
        raise NotImplementedError(f"no runtime op computes {target} on symbolic sizes")
    return {"name": f"executorch_prim::{PRIM_SCALAR_OPS[target]}", "overload": "Scalar"}
