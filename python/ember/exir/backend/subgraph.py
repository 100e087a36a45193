"""Cut a group of nodes out of an edge graph as an ``ExportedProgram``, and
put a delegate call in its place.

Everything the group reads from outside becomes a user input of the
subgraph program, in order of first use, including the outer program's
parameters and constants: they stay in the outer program (its constant
segment) and reach the delegate as call arguments, so a backend's
``preprocess`` sees only user inputs. Values the group computes and
something outside reads (or the program returns) are its outputs, in graph
order; the delegate call returns them as a list, read by ``getitem``.
"""

from __future__ import annotations

import operator
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


def boundary(nodes: list[torch.fx.Node]) -> tuple[list[torch.fx.Node], list[torch.fx.Node]]:
    """The inputs (outside nodes read, first use first) and outputs of ``nodes``."""
    inside = set(nodes)
    inputs: list[torch.fx.Node] = []
    for node in nodes:
        for u in node.all_input_nodes:
            if u not in inside and u not in inputs:
                inputs.append(u)
    outputs = [n for n in nodes if any(user not in inside for user in n.users)]
    return inputs, outputs


def subgraph_program(nodes: list[torch.fx.Node]) -> ExportedProgram:
    """An edge ExportedProgram computing ``nodes`` from their inputs."""
    inputs, outputs = boundary(nodes)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
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
        input_specs=[InputSpec(InputKind.USER_INPUT, a, None, None) for a in in_args],
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
        state_dict={},
        range_constraints={},
        module_call_graph=call_graph,
        example_inputs=None,
        constants={},
        verifiers=[EdgeDialectVerifier],
    )


def replace_with_delegate(
    gm: torch.fx.GraphModule, nodes: list[torch.fx.Node], lowered: torch.nn.Module, name: str
) -> torch.fx.Node:
    """Register ``lowered`` as ``gm.<name>`` and replace ``nodes`` by one
    ``executorch_call_delegate`` and a ``getitem`` per output. The graph may
    need a topological re-sort afterwards (``stable_topo_sort``)."""
    inputs, outputs = boundary(nodes)
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
