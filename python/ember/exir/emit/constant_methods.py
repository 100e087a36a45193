"""Constant methods: ``to_edge(programs, constant_methods={"get_max_seq_len": 128})``.

Each becomes an ExecutionPlan with no inputs and no instructions whose output
is the value (metadata a runner reads: sequence length, vocabulary size, BOS
and EOS ids, ...). Values: bool, int, float, str, a list of bools, ints or
floats, or a tensor (stored as a constant).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from ember.exir.emit.constants import ConstantBuffers
from ember.exir.emit.values import ValueTable


def check_constant_methods(
    constant_methods: dict[str, Any] | None, methods: list[str]
) -> dict[str, Any]:
    """The constant methods, checked: names free, values of a kind the format holds."""
    checked: dict[str, Any] = {}
    for name, value in (constant_methods or {}).items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"constant method name {name!r} is not a non-empty string")
        if name in methods:
            raise ValueError(
                f"constant method '{name}' has the name of a method of the program ({methods})"
            )
        _kind(name, value)
        checked[name] = value
    return checked


def _kind(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"constant method '{name}': {value} does not fit in int64")
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, (list, tuple)):
        kinds = {_kind(name, v) for v in value}
        if len(kinds) <= 1 and kinds <= {"bool", "int", "float"}:
            return f"{next(iter(kinds), 'int')} list"
        if kinds == {"int", "float"}:
            return "float list"
    raise ValueError(
        f"constant method '{name}': a {type(value).__name__} cannot be stored; use a bool, "
        "int, float, str, a list of bools, ints or floats, or a tensor"
    )


def emit_constant_method(name: str, value: Any, constants: ConstantBuffers) -> dict[str, Any]:
    """The ExecutionPlan of one constant method."""
    table = ValueTable()
    kind = _kind(name, value)
    if kind == "bool":
        out = table.bool(value)
    elif kind == "int":
        out = table.int(value)
    elif kind == "float":
        out = table.double(value)
    elif kind == "str":
        out = table.string(value)
    elif kind == "tensor":
        data = value.detach().cpu().contiguous()
        out = table.tensor(data, data_buffer_idx=constants.add(data), contiguous=True)
    elif kind == "bool list":
        out = table.bool_list([bool(v) for v in value])
    elif kind == "int list":
        out = table.int_list([int(v) for v in value])
    else:
        out = table.double_list([float(v) for v in value])
    no_inputs = pytree.treespec_dumps(pytree.tree_flatten(((), {}))[1])
    leaf = pytree.treespec_dumps(pytree.tree_flatten(0)[1])
    return {
        "name": name,
        "container_meta_type": {"encoded_inp_str": no_inputs, "encoded_out_str": leaf},
        "values": table.values,
        "inputs": [],
        "outputs": [out],
        "chains": [{"inputs": [], "outputs": [out], "instructions": []}],
        "operators": [],
        "delegates": [],
        "non_const_buffer_sizes": [0],
    }
