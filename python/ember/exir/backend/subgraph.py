"""Cut a group of nodes out of an edge graph as an ``ExportedProgram``, and
put a delegate call in its place.

Everything the group reads from outside becomes a user input of the
subgraph program, in order of first use, including the outer program's
parameters and constants: they stay in the outer program (its constant
segment) and reach the delegate as call arguments. The exception is a
constant the partitioner tagged with the group's tag and that only groups
of that tag read: the delegate owns it (a backend that packs weights needs
them at ``preprocess``), so it becomes a parameter/constant of the subgraph
program (of each such group's) and leaves the outer program. Values the group computes and
something outside reads (or the program returns) are its outputs, in graph
order; the delegate call returns them as a list, read by ``getitem``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.exported_program import ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from torch.utils import _pytree as pytree

from ember.exir.delegate import executorch_call_delegate
from ember.exir.verification.edge_verifier import EdgeDialectVerifier


def boundary(
    nodes: list[torch.fx.Node], owned: Iterable[torch.fx.Node] = ()
) -> tuple[list[torch.fx.Node], list[torch.fx.Node]]:
    """The inputs (outside nodes read, first use first) and outputs of
    ``nodes``; ``owned`` constants are not inputs."""
    inside = set(nodes) | set(owned)
    inputs: list[torch.fx.Node] = []
    for node in nodes:
        for u in node.all_input_nodes:
            if u not in inside and u not in inputs:
                inputs.append(u)
    outputs = [n for n in nodes if any(user not in inside for user in n.users)]
    return inputs, outputs


# Input kinds whose values are known ahead of time (mutated buffers aside):
# what a partitioner may hand to a delegate with ``tag_constant_data``.
CONSTANT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


@dataclass
class OwnedConstant:
    """A constant of the outer program that moves into a delegate."""

    node: torch.fx.Node
    spec: InputSpec
    value: Any


def subgraph_program(
    nodes: list[torch.fx.Node], owned: list[OwnedConstant] | None = None
) -> ExportedProgram:
    """An edge ExportedProgram computing ``nodes`` from their inputs and the
    ``owned`` constants."""
    owned = owned or []
    inputs, outputs = boundary(nodes, [c.node for c in owned])
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    state_dict: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    const_specs: list[InputSpec] = []
    for c in owned:
        env[c.node] = graph.placeholder(c.node.name)
        env[c.node].meta["val"] = c.node.meta.get("val")
        const_specs.append(
            InputSpec(c.spec.kind, TensorArgument(name=env[c.node].name), c.spec.target,
                      c.spec.persistent)
        )
        if c.spec.kind == InputKind.PARAMETER or (
            c.spec.kind == InputKind.BUFFER and c.spec.persistent
        ):
            state_dict[c.spec.target] = c.value
        else:
            constants[c.spec.target] = c.value
    for u in inputs:
        val = u.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise NotImplementedError(
                f"a delegated subgraph reads {u.name}, which is not a tensor ({type(val).__name__})"
            )
        env[u] = graph.placeholder(u.name)
        env[u].meta["val"] = val
    for node in nodes:
        env[node] = graph.node_copy(node, env.__getitem__)
    graph.output(tuple(env[o] for o in outputs))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)

    in_args = [TensorArgument(name=env[u].name) for u in inputs]
    out_args = [TensorArgument(name=env[o].name) for o in outputs]
    signature = ExportGraphSignature(
        input_specs=const_specs + [InputSpec(InputKind.USER_INPUT, a, None, None) for a in in_args],
        output_specs=[OutputSpec(OutputKind.USER_OUTPUT, a, None) for a in out_args],
    )
    in_spec = pytree.tree_flatten((tuple(inputs), {}))[1]
    out_spec = pytree.tree_flatten(list(outputs))[1]
    call_graph = [
        ModuleCallEntry(
            "",
            ModuleCallSignature(
                inputs=list(in_args), outputs=list(out_args), in_spec=in_spec, out_spec=out_spec
            ),
        )
    ]
    return ExportedProgram(
        root=gm,
        graph=gm.graph,
        graph_signature=signature,
        state_dict=state_dict,
        range_constraints={},
        module_call_graph=call_graph,
        example_inputs=None,
        constants=constants,
        verifiers=[EdgeDialectVerifier],
    )


def replace_with_delegate(
    gm: torch.fx.GraphModule,
    nodes: list[torch.fx.Node],
    lowered: torch.nn.Module,
    name: str,
    owned: Iterable[torch.fx.Node] = (),
) -> torch.fx.Node:
    """Register ``lowered`` as ``gm.<name>`` and replace ``nodes`` by one
    ``executorch_call_delegate`` and a ``getitem`` per output. ``owned``
    constants are left unused for the caller to remove. The graph may
    need a topological re-sort afterwards (``stable_topo_sort``)."""
    inputs, outputs = boundary(nodes, owned)
    gm.add_submodule(name, lowered)
    graph = gm.graph
    first_call = next(n for n in graph.nodes if n.op not in ("placeholder", "get_attr"))
    with graph.inserting_before(first_call):
        module_node = graph.get_attr(name)
    with graph.inserting_before(nodes[-1]):
        call = graph.call_function(executorch_call_delegate, (module_node, *inputs))
        call.meta["val"] = [o.meta["val"] for o in outputs]
        for i, o in enumerate(outputs):
            item = graph.call_function(operator.getitem, (call, i))
            item.meta["val"] = o.meta["val"]
            o.replace_all_uses_with(item)
    for node in reversed(nodes):
        graph.erase_node(node)
    return call


def stable_topo_sort(graph: torch.fx.Graph) -> None:
    """Reorder so every node follows its inputs, moving as little as possible."""
    order: list[torch.fx.Node] = []
    done: set[torch.fx.Node] = set()
    for root in list(graph.nodes):
        stack: list[tuple[torch.fx.Node, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in done:
                continue
            if expanded:
                done.add(node)
                order.append(node)
                continue
            stack.append((node, True))
            for u in reversed(node.all_input_nodes):
                if u not in done:
                    stack.append((u, False))
    cursor: Any = graph._root
    for node in order:
        if node.prev is not cursor:
            cursor.append(node)
        cursor = node
