"""Where each value of an out-variant graph lives.

A tensor's storage is a ``Ref``: a placeholder, or an ``alloc`` node (with an
index for an alloc of a tensor list). An out-variant call's result is its
``out`` argument(s); ``getitem`` picks one of several. Instructions are the
calls that run at run time, in graph order.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import torch

from ember.exir.control_flow import branch_outputs, branches, is_control_flow, is_cond, is_while
from ember.exir.delegate import is_delegate_call
from ember.exir.memory import alloc
from ember.exir.operator.schema import out_argument_names
from ember.exir.sym_ops import is_sym_op


class Ref(NamedTuple):
    node: torch.fx.Node
    index: int | None = None


def is_instruction(node: torch.fx.Node) -> bool:
    return (node.op == "call_function" and node.target not in (alloc, operator.getitem)
            and not is_control_flow(node))


def instructions(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if is_instruction(n)]


def out_nodes(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The ``alloc`` nodes an out-variant call writes into, in schema order."""
    return [node.kwargs[name] for name in out_argument_names(node.target)]


def resolve(node: torch.fx.Node) -> Any:
    """The storage of a node's value: a Ref, or a list of them."""
    if node.op == "placeholder" and "ember_operand" in node.meta:
        return resolve(node.meta["ember_operand"])  # a branch's operand (control_flow.py)
    if node.op in ("placeholder", "get_attr"):
        return Ref(node)
    if is_cond(node):
        # Result i is the true branch's output i or the false branch's: both.
        true, false = branches(node)
        return [
            [resolve(t), resolve(f)]
            for t, f in zip(branch_outputs(true), branch_outputs(false), strict=True)
        ]
    if is_while(node):
        # The loop's results are its carried values (control_flow.carry_in_own_memory).
        return [resolve(c) for c in node.args[2]]
    if node.target is alloc:
        if isinstance(node.meta["val"], (list, tuple)):
            return [Ref(node, i) for i in range(len(node.meta["val"]))]
        return Ref(node)
    if node.target is operator.getitem:
        return resolve(node.args[0])[node.args[1]]
    if is_delegate_call(node):  # A delegate writes its own planned result(s).
        if isinstance(node.meta["val"], (list, tuple)):
            return [Ref(node, i) for i in range(len(node.meta["val"]))]
        return Ref(node)
    if node.op == "call_function" and is_sym_op(node.target):
        return []  # a symbolic scalar: a value, not planned memory
    if node.op == "call_function" and hasattr(node.target, "_schema"):
        outs = [resolve(n) for n in out_nodes(node)]
        return outs[0] if len(outs) == 1 else outs
    raise NotImplementedError(f"no storage for node {node.name} ({node.target})")


def flat_refs(value: Any) -> list[Ref]:
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in flat_refs(v)]
    return []


def nodes_in(args: Any) -> list[torch.fx.Node]:
    found: list[torch.fx.Node] = []
    torch.fx.node.map_arg(args, found.append)
    return found
