"""Mutable buffers: state a method keeps from one run to the next (a KV
cache, a step counter, running statistics).

torch.export makes a buffer update functional: the graph computes the
buffer's new value and returns it as a ``BUFFER_MUTATION`` output. In the
out-variant graph Ember writes that value back into the buffer's own memory,
which the memory plan keeps for the method's lifetime in a region of its own
(planned buffer 2, filled at load with the buffer's initial value):

- **in place**, when the new value is the buffer with part of it overwritten
  (``index_put``, ``slice_scatter``, ``select_scatter`` of the buffer itself;
  ``index_copy_`` and slice assignment export as these) and nothing reads the
  old value after the update: the op writes into the buffer (``out`` is the
  buffer), and its kernel, seeing ``out`` alias ``self``, copies only the new
  part. A KV-cache step then costs the size of the new entries, not of the
  cache;
- **by a copy** otherwise: ``aten::copy.out(buffer, value, out=buffer)`` as the
  method's last instruction (after every read of the old value).

The method's outputs are the user outputs only; the state stays inside.
An input the method mutates in place (``x.add_(1)``) is written back the same
way into the input's own (planned) memory; the runtime's Python ``execute``
then copies it into the caller's tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.export import ExportedProgram

from ember.exir.memory import alloc
from ember.exir.operator.schema import bind, out_argument_names
from ember.exir.symbolic import SymbolBounds

# Ops whose result is ``self`` with part of it replaced: with ``out`` = ``self``
# their kernels leave the rest of ``self`` alone (op_index.cpp, op_slice_copy.cpp).
# The argument holding the part that changes:
_UPDATES_IN_PLACE = {
    torch.ops.aten.index_put.out: "values",
    torch.ops.aten.slice_scatter.out: "src",
    torch.ops.aten.select_scatter.out: "src",
}


@dataclass
class WriteBack:
    """How one mutated buffer gets its new value."""

    buffer: str  # the buffer's fully qualified name (``k_cache``, ``layers.0.k``)
    placeholder: str  # its placeholder's name in the graph
    how: str  # "in place (<node>)", "copy from <node>" or "unchanged"
    bytes_per_run: int  # bytes written into the buffer per run (upper bound)


def mutated_buffer_placeholders(ep: ExportedProgram) -> dict[str, str]:
    """Placeholder name -> buffer name, for the buffers ``ep`` mutates."""
    sig = ep.graph_signature
    mutated = set(sig.buffers_to_mutate.values())
    return {name: target for name, target in sig.inputs_to_buffers.items() if target in mutated}


def _new_values(ep: ExportedProgram, kind: str) -> dict[str, torch.fx.Node]:
    """Buffer (or mutated input) name -> the node computing its new value."""
    sig = ep.graph_signature
    by_name = {n.name: n for n in ep.graph_module.graph.nodes}
    outputs = list(ep.graph_module.graph.output_node().args[0])
    values: dict[str, torch.fx.Node] = {}
    for spec, node in zip(sig.output_specs, outputs, strict=True):
        if spec.kind.name == kind:
            values[spec.target] = (
                node if isinstance(node, torch.fx.Node) else by_name[spec.arg.name]
            )
    return values


def _can_update_in_place(
    node: torch.fx.Node, buffer: torch.fx.Node, order: dict[torch.fx.Node, int]
) -> bool:
    if node.op != "call_function" or node.target not in _UPDATES_IN_PLACE:
        return False
    bound = bind(node.target._schema, node.args, node.kwargs)
    out = bound.get(out_argument_names(node.target)[0])
    if bound.get("self") is not buffer:
        return False
    if not isinstance(out, torch.fx.Node) or out.target is not alloc:
        return False
    want, got = buffer.meta["val"], out.meta["val"]
    if tuple(want.shape) != tuple(got.shape) or want.dtype != got.dtype:
        return False
    if not want.is_contiguous():
        return False
    # Every other reader of the old value must run before the update.
    return all(order[u] < order[node] for u in buffer.users if u is not node)


def write_back_mutated_buffers(ep: ExportedProgram) -> list[WriteBack]:
    """Rewrite ``ep``'s out-variant graph (in place) so each mutated buffer
    receives its new value in its own memory; returns what was done."""
    gm = ep.graph_module
    graph = gm.graph
    nbytes = SymbolBounds(ep).nbytes
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    values = _new_values(ep, "BUFFER_MUTATION")
    targets = list(mutated_buffer_placeholders(ep).items())
    inputs = _new_values(ep, "USER_INPUT_MUTATION")
    values.update(inputs)
    targets += [(name, name) for name in inputs]  # an input's target is its own name
    done: list[WriteBack] = []
    copies: list[tuple[torch.fx.Node, torch.fx.Node]] = []
    for name, target in targets:
        buffer = placeholders[name]
        value = values[target]
        if value is buffer:
            done.append(WriteBack(target, name, "unchanged", 0))
            continue
        order = {n: i for i, n in enumerate(graph.nodes)}
        if _can_update_in_place(value, buffer, order):
            out_name = out_argument_names(value.target)[0]
            old = value.kwargs[out_name]
            value.kwargs = {**value.kwargs, out_name: buffer}
            if not old.users:
                graph.erase_node(old)
            bound = bind(value.target._schema, value.args, value.kwargs)
            part = bound[_UPDATES_IN_PLACE[value.target]]
            done.append(
                WriteBack(target, name, f"in place ({value.name})", nbytes(part.meta["val"]))
            )
        else:
            copies.append((buffer, value))
            done.append(WriteBack(target, name, f"copy from {value.name}",
                                  nbytes(buffer.meta["val"])))
    output = graph.output_node()
    for buffer, value in copies:
        with graph.inserting_before(output):
            node = graph.call_function(
                torch.ops.aten.copy.out, (buffer, value), {"non_blocking": False, "out": buffer}
            )
        node.meta["val"] = buffer.meta["val"]
    gm.recompile()
    return done
