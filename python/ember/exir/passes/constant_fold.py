"""Constant folding: compute once at export what depends only on constants.

A call whose tensor operands are all parameters, buffers or lifted
constants (never mutated), or results of such calls, is run with PyTorch
eager and replaced by a new lifted constant, stored in the constant
segment. ``linear``'s ``permute_copy(weight)`` is the usual case: the
runtime then reads the transposed weight instead of copying it on every
call. Ops tagged nondeterministic (``randn``, ``native_dropout``, ...),
mutating ops, delegate calls and ``quantized_decomposed`` ops (so
quantized weights stay int8) are never folded. Equal folded results
share one constant; inputs left unused are dropped.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch._ops import OpOverload
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import EdgeOpOverload
from ember.exir.exported import copy_graph_module
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.storage import nodes_in

_NONDETERMINISTIC = (torch.Tag.nondeterministic_seeded, torch.Tag.nondeterministic_bitwise)


def _is_foldable_op(target: Any) -> bool:
    op = target.op if isinstance(target, EdgeOpOverload) else target
    return (
        isinstance(op, OpOverload)
        # A quantized weight stays int8 in the program (4x smaller) and is
        # dequantized by its kernel at run time.
        and op.namespace != "quantized_decomposed"
        and not op._schema.is_mutable
        and len(op._schema.returns) > 0
        and not any(tag in op.tags for tag in _NONDETERMINISTIC)
    )


def _matches(value: Any, meta: Any) -> bool:
    """Eager and fake results agree on type, dtype and shape."""
    if isinstance(meta, torch.Tensor):
        return (
            isinstance(value, torch.Tensor)
            and value.dtype == meta.dtype
            and value.shape == meta.shape
        )
    if isinstance(meta, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(meta)
            and all(_matches(v, m) for v, m in zip(value, meta, strict=True))
        )
    return False


class ConstantFoldPass:
    """``ConstantFoldPass()(ep)`` returns the folded program; ``ep`` is not changed."""

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        inputs = LiftedConstants(ep, copy_graph_module(ep.graph_module))
        graph = inputs.gm.graph
        known = self._evaluate(inputs)
        folded: list[tuple[torch.Tensor, torch.fx.Node]] = []
        for node in list(graph.nodes):
            if node.op != "call_function" or not isinstance(known.get(node), torch.Tensor):
                continue
            if all(u in known for u in node.users):
                continue  # read only by other folded calls (the output node never is one)
            node.replace_all_uses_with(self._constant(inputs, folded, known[node]))
        for node in reversed(list(graph.nodes)):
            if node in known and node.op == "call_function" and not node.users:
                graph.erase_node(node)
        inputs.remove_unused()
        return inputs.program()

    @staticmethod
    def _evaluate(inputs: LiftedConstants) -> dict[torch.fx.Node, Any]:
        """Eager values of the constant inputs and of every foldable call."""
        known: dict[torch.fx.Node, Any] = {}
        for node in inputs.gm.graph.nodes:
            if node.op == "placeholder":
                value = inputs.value(node)
                if value is not None:
                    known[node] = value
                continue
            if node.op != "call_function" or not all(
                n in known for n in nodes_in((node.args, node.kwargs))
            ):
                continue
            meta = node.meta.get("val")
            if node.target is operator.getitem:
                known[node] = known[node.args[0]][node.args[1]]
                continue
            if not _is_foldable_op(node.target):
                continue
            if not isinstance(meta, torch.Tensor) and not all(
                u.target is operator.getitem for u in node.users
            ):
                continue  # a list result must be read through getitem
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), known.__getitem__)
            with torch.no_grad():
                value = node.target(*args, **kwargs)
            if _matches(value, meta):
                known[node] = value
        return known

    @staticmethod
    def _constant(
        inputs: LiftedConstants,
        folded: list[tuple[torch.Tensor, torch.fx.Node]],
        value: torch.Tensor,
    ) -> torch.fx.Node:
        """The placeholder of ``value``; a bitwise-equal earlier result is shared."""
        value = value.detach().contiguous()
        bits = value.reshape(-1).view(torch.uint8)
        for other, node in folded:
            if (other.dtype, other.shape) == (value.dtype, value.shape) and torch.equal(
                other.reshape(-1).view(torch.uint8), bits
            ):
                return node
        node = inputs.add(value, "folded")
        folded.append((value, node))
        return node
