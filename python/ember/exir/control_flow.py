"""Control flow: ``torch.cond`` through the pipeline.

The branches of a ``cond`` are graph modules of their own (``get_attr``
submodules of the graph that calls it). Ember keeps them that way through the
edge and out-variant dialects — every pass that rewrites ops runs on each
branch too (``for_each_branch``) — and the emitter writes them inline, in one
chain, with the format's jump and move instructions (``emit/method.py``):

    pred -> Bool; JumpFalse(pred, else); <true branch>; Move(outputs);
    JumpFalse(False, end); else: <false branch>; Move(outputs); end:

The memory planner walks the same order (``linear_instructions``), so the
values of the two branches may share memory while each result lives until
its last reader after the ``cond``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator

import torch

COND = torch.ops.higher_order.cond


def is_cond(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is COND


def branches(node: torch.fx.Node) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    """The true and false branch modules of a ``cond`` node."""
    root = node.graph.owning_module
    return getattr(root, node.args[1].target), getattr(root, node.args[2].target)


def operands(node: torch.fx.Node) -> list[torch.fx.Node]:
    return list(node.args[3])


def branch_outputs(branch: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return list(branch.graph.output_node().args[0])


def for_each_branch(
    gm: torch.fx.GraphModule, fn: Callable[[torch.fx.GraphModule], torch.fx.GraphModule | None]
) -> None:
    """Apply ``fn`` to every branch (nested ones first), in place; a returned
    module replaces the branch."""
    for node in list(gm.graph.nodes):
        if not is_cond(node):
            continue
        for attr in (node.args[1], node.args[2]):
            branch = getattr(gm, attr.target)
            for_each_branch(branch, fn)
            new = fn(branch)
            if new is not None and new is not branch:
                setattr(gm, attr.target, new)


def link_operands(gm: torch.fx.GraphModule) -> None:
    """Each branch placeholder records the outer node it stands for
    (``meta["ember_operand"]``): storage and lifetimes follow it there."""
    for node in gm.graph.nodes:
        if not is_cond(node):
            continue
        for branch in branches(node):
            inner = [n for n in branch.graph.nodes if n.op == "placeholder"]
            for placeholder, outer in zip(inner, operands(node), strict=True):
                placeholder.meta["ember_operand"] = outer
            link_operands(branch)


def linear_instructions(gm: torch.fx.GraphModule) -> Iterator[torch.fx.Node]:
    """The instructions in the order the emitter writes them: a ``cond``
    (its condition and jump), then its true branch, then its false branch."""
    from ember.exir.storage import is_instruction

    for node in gm.graph.nodes:
        if is_cond(node):
            yield node
            for branch in branches(node):
                yield from linear_instructions(branch)
        elif is_instruction(node):
            yield node


def all_nodes(gm: torch.fx.GraphModule) -> Iterator[torch.fx.Node]:
    """Every node of ``gm`` and of its branches."""
    for node in gm.graph.nodes:
        yield node
        if is_cond(node):
            for branch in branches(node):
                yield from all_nodes(branch)


def cond_results(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The ``getitem`` nodes reading a ``cond``'s results, by index (None when unread)."""
    n = len(branch_outputs(branches(node)[0]))
    found: list[torch.fx.Node | None] = [None] * n
    for user in node.users:
        if user.target is operator.getitem:
            found[user.args[1]] = user
    return found
