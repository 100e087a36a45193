"""``to_backend``, in the tutorial's two forms:

- ``to_backend(backend_id, edge_program, compile_specs)`` lowers the whole
  program with that backend's ``preprocess`` and returns a
  ``LoweredBackendModule``;
- ``to_backend(edge_program, partitioner)`` returns a new edge program in
  which each subgraph the partitioner tagged is replaced by
  ``torch.ops.higher_order.executorch_call_delegate(lowered_module_<n>, ...)``.

Subgraphs are numbered from the end of the graph (the last one is
``lowered_module_0``), which is how the tutorial prints them.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from ember.exir.backend.backend_details import get_backend
from ember.exir.backend.compile_spec_schema import CompileSpec
from ember.exir.backend.fuse import fuse_tagged_nodes
from ember.exir.backend.lowered_backend_module import LoweredBackendModule
from ember.exir.backend.partitioner import DELEGATION_TAG, Partitioner, PartitionResult
from ember.exir.backend.subgraph import (
    CONSTANT_KINDS,
    OwnedConstant,
    boundary,
    replace_with_delegate,
    stable_topo_sort,
    subgraph_program,
)
from ember.exir.exported import copy_graph_module, rebuild
from ember.exir.verification.edge_verifier import EdgeDialectVerifier

__all__ = ["LoweredBackendModule", "to_backend"]


def to_backend(*args: Any, **kwargs: Any) -> Any:
    """``to_backend(backend_id, edge_program, compile_specs)`` -> LoweredBackendModule;
    ``to_backend(edge_program, partitioner)`` -> ExportedProgram."""
    first = args[0] if args else kwargs.get("backend_id", kwargs.get("edge_program"))
    if isinstance(first, str):
        return _lower_program(*args, **kwargs)
    return _lower_partitions(*args, **kwargs)


def _lower_program(
    backend_id: str, edge_program: ExportedProgram, compile_specs: list[CompileSpec]
) -> LoweredBackendModule:
    if not isinstance(edge_program, ExportedProgram):
        raise TypeError(
            f"to_backend('{backend_id}', ...) lowers an ExportedProgram (use "
            f"EdgeProgramManager.exported_program()), got {type(edge_program).__name__}"
        )
    specs = list(compile_specs)
    result = get_backend(backend_id).preprocess(edge_program, specs)
    if not isinstance(result.processed_bytes, (bytes, bytearray)):
        raise TypeError(f"{backend_id}.preprocess must return PreprocessResult(bytes)")
    return LoweredBackendModule(edge_program, backend_id, bytes(result.processed_bytes), specs)


def _lower_partitions(edge_program: ExportedProgram, partitioner: Partitioner) -> ExportedProgram:
    if not isinstance(edge_program, ExportedProgram):
        raise TypeError(f"to_backend expects an ExportedProgram, got {type(edge_program).__name__}")
    if not isinstance(partitioner, Partitioner):
        raise TypeError(
            "to_backend(edge_program, partitioner) expects an "
            f"ember.exir.backend.partitioner.Partitioner, got {type(partitioner).__name__}"
        )
    # The partitioner tags a copy: the caller's program is left as it was.
    working = rebuild(
        edge_program,
        copy_graph_module(edge_program.graph_module),
        verifier=edge_program.verifiers[0] if edge_program.verifiers else EdgeDialectVerifier,
    )
    result = partitioner.partition(working)
    if not isinstance(result, PartitionResult):
        raise TypeError(f"{type(partitioner).__name__}.partition must return a PartitionResult")
    tagged = result.tagged_exported_program
    gm = copy_graph_module(tagged.graph_module)
    groups = fuse_tagged_nodes(gm)
    for group in groups:
        if group.tag not in result.partition_tags:
            raise ValueError(
                f"node {group.nodes[0].name} has {DELEGATION_TAG} '{group.tag}', which "
                f"{type(partitioner).__name__} gave no DelegationSpec for"
            )
    taken = {name for name, _ in gm.named_children()}
    index = 0
    moved: set[str] = set()
    copied: dict[str, torch.fx.Node] = {}
    for group in reversed(groups):
        spec = result.partition_tags[group.tag]
        owned = _owned_constants(tagged, group.tag, group.nodes)
        program = subgraph_program(group.nodes, owned)
        lowered = _lower_program(spec.backend_id, program, spec.compile_specs)
        while f"lowered_module_{index}" in taken:
            index += 1
        name = f"lowered_module_{index}"
        taken.add(name)
        replace_with_delegate(gm, group.nodes, lowered, name, [c.node for c in owned])
        for c in owned:
            copied[c.node.name] = c.node
    # A constant several groups own (each took a copy) leaves once none reads it.
    for node in copied.values():
        if not node.users:
            gm.graph.erase_node(node)
            moved.add(node.name)
    stable_topo_sort(gm.graph)
    gm.graph.lint()
    gm.recompile()
    if not moved:
        return rebuild(tagged, gm, verifier=EdgeDialectVerifier)
    # Constants now inside delegates leave the outer program's signature and data.
    specs = [s for s in tagged.graph_signature.input_specs if getattr(s.arg, "name", None) not in moved]
    gone = {s.target for s in tagged.graph_signature.input_specs
            if getattr(s.arg, "name", None) in moved}
    still = {s.target for s in specs}
    gone -= still
    return rebuild(
        tagged,
        gm,
        verifier=EdgeDialectVerifier,
        input_specs=specs,
        state_dict={k: v for k, v in tagged.state_dict.items() if k not in gone},
        constants={k: v for k, v in tagged.constants.items() if k not in gone},
    )


def _owned_constants(
    program: ExportedProgram, tag: str, nodes: list[torch.fx.Node]
) -> list[OwnedConstant]:
    """Constants the partitioner tagged ``tag`` that ``nodes`` read and
    nothing outside groups of that tag reads: the delegate takes them over
    (``tag_constant_data``). A constant that several groups of the tag read
    (a layer applied twice, split by an untagged node in between) is copied
    into each: a backend that packs weights needs them at ``preprocess``,
    and its blobs hold their own packed copies anyway."""
    inside = set(nodes)
    mutated = set(program.graph_signature.buffers_to_mutate.values())
    specs = {getattr(s.arg, "name", None): s for s in program.graph_signature.input_specs}
    owned = []
    inputs, _ = boundary(nodes)
    for u in inputs:
        spec = specs.get(u.name)
        if (
            u.op != "placeholder"
            or u.meta.get(DELEGATION_TAG) != tag
            or spec is None
            or spec.kind not in CONSTANT_KINDS
            or spec.target in mutated
            or any(user not in inside and user.meta.get(DELEGATION_TAG) != tag
                   for user in u.users)
        ):
            continue
        if spec.kind == InputKind.PARAMETER or (spec.kind == InputKind.BUFFER and spec.persistent):
            value = program.state_dict[spec.target]
        else:
            value = program.constants[spec.target]
        owned.append(OwnedConstant(u, spec, value))
    return owned
