"""Constant folding: compute once at export what depends only on constants.

A call whose tensor operands are all parameters, buffers or lifted
constants (never mutated), or results of such calls, is run with PyTorch
eager and replaced by a new lifted constant, stored in the constant
segment. ``linear``'s ``permute_copy(weight)`` is the usual case: the
runtime then reads the transposed weight instead of copying it on every
call. When the weight itself stays in the program (tied to an embedding:
GPT-2's ``lm_head``) and only matrix products read the transpose (``mm``,
``addmm``, ``bmm``, whose kernels take any dim order), the transpose is
stored as the weight's own bytes with a permuted dim order instead of a
second copy. (Otherwise it is stored contiguous, the layout every reader of
the format expects.) Ops tagged nondeterministic (``randn``, ``native_dropout``, ...),
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

# Kernels that read their operands in any dim order (op_mm.cpp, op_addmm.cpp, op_bmm.cpp,
# op_fused_linear.cpp).
_ANY_DIM_ORDER = ("aten::mm", "aten::addmm", "aten::bmm", "ember_fused::fused_linear")


def _op_name(target: Any) -> str:
    op = target.op if isinstance(target, EdgeOpOverload) else target
    return op._schema.name if isinstance(op, OpOverload) else ""


def _is_permute(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and _op_name(node.target) in ("aten::permute_copy",
                                                                    "aten::permute")


def _read_in_any_dim_order(node: torch.fx.Node) -> bool:
    return bool(node.users) and all(_op_name(u.target) in _ANY_DIM_ORDER for u in node.users)


def _shares_a_kept_constant(node: torch.fx.Node) -> bool:
    """``node`` permutes a constant that something other than a permute keeps
    reading (an embedding tied to the head): a copy would store it twice."""
    source = node.args[0]
    return source.op == "placeholder" and any(
        u is not node and not _is_permute(u) for u in source.users
    )


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
                if _is_permute(node) and _read_in_any_dim_order(node) and \
                        _shares_a_kept_constant(node):
                    value = args[0].permute(*args[1])  # a view: the same bytes, permuted
                else:
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
        """The placeholder of ``value``; a bitwise-equal earlier result is shared.
        A permuted view stays one (stored in its dim order, ``emit/method.py``)."""
        value = value.detach()
        if not value.is_contiguous() and not _is_permutation_of_dense(value):
            value = value.contiguous()
        bits = value.contiguous().reshape(-1).view(torch.uint8)
        for other, node in folded:
            if (other.dtype, other.shape, other.stride()) == (
                value.dtype, value.shape, value.stride()
            ) and torch.equal(other.contiguous().reshape(-1).view(torch.uint8), bits):
                return node
        node = inputs.add(value, "folded")
        folded.append((value, node))
        return node


def _is_permutation_of_dense(t: torch.Tensor) -> bool:
    """``t`` is a dense tensor with permuted dims (a dim order describes it)."""
    try:
        order = t.dim_order()
    except RuntimeError:
        return False
    return t.permute(*order).is_contiguous()
