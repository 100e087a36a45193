"""Rebuild an ``ExportedProgram`` around a new graph module.

Passes rename nodes (an edge op's node is ``aten_relu_default``), so the
graph signature and module call graph are updated by position: the i-th
placeholder is the i-th input spec, the i-th output is the i-th output spec.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch._export.verifier import Verifier
from torch.export import ExportedProgram
from torch.export.graph_signature import (
    ConstantArgument,
    CustomObjArgument,
    ExportGraphSignature,
    InputSpec,
    OutputSpec,
)


def _renamed(arg: Any, name: str) -> Any:
    if isinstance(arg, (ConstantArgument, CustomObjArgument)):
        return arg
    return type(arg)(name=name)


def updated_signature(
    old: ExportGraphSignature, gm: torch.fx.GraphModule
) -> tuple[ExportGraphSignature, dict[str, str]]:
    """The signature of ``gm`` and a map of renamed input/output names."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    outputs = list(gm.graph.output_node().args[0])
    if len(placeholders) != len(old.input_specs) or len(outputs) != len(old.output_specs):
        raise ValueError(
            "a pass changed the number of inputs or outputs: "
            f"{len(old.input_specs)}->{len(placeholders)} inputs, "
            f"{len(old.output_specs)}->{len(outputs)} outputs"
        )
    renames: dict[str, str] = {}
    inputs = []
    for spec, node in zip(old.input_specs, placeholders, strict=False):
        renames[getattr(spec.arg, "name", "")] = node.name
        inputs.append(
            InputSpec(spec.kind, _renamed(spec.arg, node.name), spec.target, spec.persistent)
        )
    outs = []
    for spec, node in zip(old.output_specs, outputs, strict=False):
        name = node.name if isinstance(node, torch.fx.Node) else ""
        renames[getattr(spec.arg, "name", "")] = name
        outs.append(OutputSpec(spec.kind, _renamed(spec.arg, name), spec.target))
    return ExportGraphSignature(input_specs=inputs, output_specs=outs), renames


def _updated_call_graph(ep: ExportedProgram, renames: dict[str, str]) -> list[Any]:
    call_graph = copy.deepcopy(ep.module_call_graph)
    for entry in call_graph:
        if entry.signature is None:
            continue
        for arg in [*entry.signature.inputs, *entry.signature.outputs]:
            if getattr(arg, "name", None) in renames:
                arg.name = renames[arg.name]
    return call_graph


def rebuild(
    ep: ExportedProgram,
    gm: torch.fx.GraphModule,
    *,
    verifier: type[Verifier],
    program_class: type[ExportedProgram] = ExportedProgram,
    input_specs: list[InputSpec] | None = None,
    state_dict: dict[str, Any] | None = None,
    constants: dict[str, Any] | None = None,
) -> ExportedProgram:
    """A new program with ``gm`` as its graph, checked by ``verifier``.

    A pass that added or removed inputs gives ``input_specs`` (one per
    placeholder of ``gm``, in order) and the ``state_dict``/``constants``
    they refer to; names are taken from ``gm`` either way."""
    old = ep.graph_signature
    if input_specs is not None:
        old = ExportGraphSignature(input_specs=input_specs, output_specs=old.output_specs)
    signature, renames = updated_signature(old, gm)
    return program_class(
        root=gm,
        graph=gm.graph,
        graph_signature=signature,
        state_dict=ep.state_dict if state_dict is None else state_dict,
        range_constraints=copy.deepcopy(ep.range_constraints),
        module_call_graph=_updated_call_graph(ep, renames),
        example_inputs=ep.example_inputs,
        constants=ep.constants if constants is None else constants,
        verifiers=[verifier],
    )


def copy_graph_module(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A graph module with a copied graph (node names and meta kept)."""
    graph = torch.fx.Graph()
    out = graph.graph_copy(gm.graph, {})
    graph.output(out)
    graph.output_node().meta = dict(gm.graph.output_node().meta)
    copied = torch.fx.GraphModule(gm, graph)
    copied.meta.update(gm.meta)
    # Branches of control flow (get_attr graph modules) are copied too, so a
    # pass that rewrites them leaves the original program as it was.
    for node in graph.nodes:
        if node.op == "get_attr" and isinstance(getattr(copied, node.target, None),
                                                torch.fx.GraphModule):
            setattr(copied, node.target, copy_graph_module(getattr(copied, node.target)))
    return copied
