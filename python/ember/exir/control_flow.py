"""Control flow: ``torch.cond``, ``while_loop`` and ``map`` through the pipeline.

The branches of a ``cond`` and the condition and body of a ``while_loop``
are graph modules of their own (``get_attr`` submodules of the graph that
calls them). Ember keeps them that way through the edge and out-variant
dialects — every pass that rewrites ops runs on each of them too
(``for_each_branch``) — and the emitter writes them inline, in one chain,
with the format's jump and move instructions (``emit/method.py``):

    cond:   pred -> Bool; JumpFalse(pred, else); <true branch>; Move(outputs);
            JumpFalse(False, end); else: <false branch>; Move(outputs); end:
    while:  copy carried values into their own memory; top: <condition> -> Bool;
            JumpFalse(Bool, end); <body>; copy the body's results into the
            carried values; JumpFalse(False, top); end:

``map`` over a tensor's leading dimension is unrolled at ``to_edge`` (its
length is static): one copy of the body per slice, results stacked.

The memory planner walks the same order (``linear_instructions``): the two
branches' values may share memory, each result lives until its last reader,
and whatever a loop reads from outside lives until the loop ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

COND = torch.ops.higher_order.cond
WHILE = torch.ops.higher_order.while_loop
MAP = torch.ops.higher_order.map_impl


def is_cond(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is COND


def is_while(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is WHILE


def is_control_flow(node: torch.fx.Node) -> bool:
    return is_cond(node) or is_while(node)


def _subgraph_attrs(node: torch.fx.Node) -> list[torch.fx.Node]:
    return [node.args[1], node.args[2]] if is_cond(node) else [node.args[0], node.args[1]]


def subgraphs(node: torch.fx.Node) -> list[torch.fx.GraphModule]:
    """A cond's true and false branches; a while loop's condition and body."""
    root = node.graph.owning_module
    return [getattr(root, a.target) for a in _subgraph_attrs(node)]


def subgraph_operands(node: torch.fx.Node) -> list[Any]:
    """What the subgraphs' placeholders stand for, in order."""
    if is_cond(node):
        return list(node.args[3])
    return list(node.args[2]) + list(node.args[3])


def branches(node: torch.fx.Node) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    """The true and false branch modules of a ``cond`` node."""
    root = node.graph.owning_module
    return getattr(root, node.args[1].target), getattr(root, node.args[2].target)


def operands(node: torch.fx.Node) -> list[torch.fx.Node]:
    return list(node.args[3])


def branch_outputs(branch: torch.fx.GraphModule) -> list[torch.fx.Node]:
    out = branch.graph.output_node().args[0]
    return list(out) if isinstance(out, (list, tuple)) else [out]


def for_each_branch(
    gm: torch.fx.GraphModule, fn: Callable[[torch.fx.GraphModule], torch.fx.GraphModule | None]
) -> None:
    """Apply ``fn`` to every subgraph of control flow (nested ones first), in
    place; a returned module replaces the subgraph."""
    for node in list(gm.graph.nodes):
        if not is_control_flow(node):
            continue
        for attr in _subgraph_attrs(node):
            sub = getattr(gm, attr.target)
            for_each_branch(sub, fn)
            new = fn(sub)
            if new is not None and new is not sub:
                setattr(gm, attr.target, new)


def link_operands(gm: torch.fx.GraphModule) -> None:
    """Each subgraph placeholder records the outer node it stands for
    (``meta["ember_operand"]``): storage and lifetimes follow it there."""
    for node in gm.graph.nodes:
        if not is_control_flow(node):
            continue
        for sub in subgraphs(node):
            inner = [n for n in sub.graph.nodes if n.op == "placeholder"]
            for placeholder, outer in zip(inner, subgraph_operands(node), strict=True):
                if isinstance(outer, torch.fx.Node):
                    placeholder.meta["ember_operand"] = outer
            link_operands(sub)


def linear_instructions(gm: torch.fx.GraphModule) -> Iterator[torch.fx.Node]:
    """The instructions in the order the emitter writes them: a ``cond``
    (its condition and jump), then its true branch, then its false branch; a
    ``while_loop``, then its condition, then its body."""
    from ember.exir.storage import is_instruction

    for node in gm.graph.nodes:
        if is_control_flow(node):
            yield node
            for sub in subgraphs(node):
                yield from linear_instructions(sub)
        elif is_instruction(node):
            yield node


def all_nodes(gm: torch.fx.GraphModule) -> Iterator[torch.fx.Node]:
    """Every node of ``gm`` and of its control flow's subgraphs."""
    for node in gm.graph.nodes:
        yield node
        if is_control_flow(node):
            for sub in subgraphs(node):
                yield from all_nodes(sub)


def loop_regions(
    gm: torch.fx.GraphModule, order: dict[torch.fx.Node, int]
) -> list[tuple[int, int]]:
    """[first, last] instruction index of every while loop (condition and body)."""
    regions = []
    for node in all_nodes(gm):
        if is_while(node):
            inside = [order[n] for sub in subgraphs(node) for n in linear_instructions(sub)]
            regions.append((order[node], max(inside, default=order[node])))
    return regions


def carry_in_own_memory(gm: torch.fx.GraphModule) -> None:
    """Give each while loop's carried values memory of their own (an alloc
    before the loop, filled by a copy of the initial value) and end its body
    with copies of its results into them: the body then never reads what it
    is writing, and the loop's results are those values. Run on out-variant
    graphs (nested loops too)."""
    from ember.exir.memory import alloc

    for node in list(gm.graph.nodes):
        if is_control_flow(node):
            for sub in subgraphs(node):
                carry_in_own_memory(sub)
        if not is_while(node):
            continue
        carried = list(node.args[2])
        own = []
        for value in carried:
            val = value.meta["val"]
            with gm.graph.inserting_before(node):
                buffer = gm.graph.call_function(alloc, ((tuple(val.shape), val.dtype),))
                buffer.meta["val"] = val
                fill = gm.graph.call_function(
                    torch.ops.aten.copy.out, (buffer, value), {"non_blocking": False, "out": buffer}
                )
                fill.meta["val"] = val
            own.append(fill)
        node.args = (node.args[0], node.args[1], tuple(own), node.args[3])
        body = subgraphs(node)[1]
        inner = [n for n in body.graph.nodes if n.op == "placeholder"][: len(carried)]
        output = body.graph.output_node()
        for placeholder, result in zip(inner, branch_outputs(body), strict=True):
            with body.graph.inserting_before(output):
                back = body.graph.call_function(
                    torch.ops.aten.copy.out, (placeholder, result),
                    {"non_blocking": False, "out": placeholder},
                )
            back.meta["val"] = placeholder.meta["val"]
        body.recompile()
    gm.recompile()


def unroll_maps(gm: torch.fx.GraphModule) -> None:
    """``map_impl(body, xs, args)`` -> one inlined copy of ``body`` per slice of
    ``xs`` along dimension 0, results stacked (ATen graphs, before the edge
    rewrites)."""
    from torch._guards import detect_fake_mode

    fake_mode = detect_fake_mode([n.meta["val"] for n in gm.graph.nodes if "val" in n.meta])
    aten = torch.ops.aten

    def call(target: Any, args: tuple, before: torch.fx.Node) -> torch.fx.Node:
        with gm.graph.inserting_before(before):
            new = gm.graph.call_function(target, args)
        vals = torch.fx.node.map_arg(args, lambda n: n.meta["val"])
        with fake_mode:
            new.meta["val"] = target(*vals)
        return new

    for node in list(gm.graph.nodes):
        if not (node.op == "call_function" and node.target is MAP):
            continue
        body = getattr(gm, node.args[0].target)
        unroll_maps(body)
        xs, extra = list(node.args[1]), list(node.args[2])
        length = xs[0].meta["val"].shape[0]
        if not isinstance(length, int) or length == 0:
            raise NotImplementedError(
                f"{node.name}: map over a leading dimension of size {length}: Ember unrolls "
                "map, so the size must be static and non-zero"
            )
        per_slice = []
        for i in range(length):
            slices = [call(aten.select.int, (x, 0, i), node) for x in xs]
            env = dict(zip([n for n in body.graph.nodes if n.op == "placeholder"],
                           slices + extra, strict=True))
            with gm.graph.inserting_before(node):
                for inner in body.graph.nodes:
                    if inner.op in ("placeholder", "output"):
                        continue
                    env[inner] = gm.graph.node_copy(inner, lambda n: env[n])
            per_slice.append([env[o] for o in branch_outputs(body)])
        for user in list(node.users):
            j = user.args[1]
            parts = [call(aten.unsqueeze.default, (outs[j], 0), user) for outs in per_slice]
            stacked = call(aten.cat.default, (parts, 0), user)
            user.replace_all_uses_with(stacked)
            gm.graph.erase_node(user)
        attr = node.args[0]
        gm.graph.erase_node(node)
        if not attr.users:
            gm.graph.erase_node(attr)
    gm.recompile()
