"""The edge-dialect verifier: edge ops only, and only core ATen among them.

Core means ``torch.Tag.core`` in the op's tags, plus the ``*_copy`` view
variants (``torch.Tag.view_copy``) and the few non-core ops Ember has its own
kernel for (``ember.exir.operator.kernel_ops``). Ops of other namespaces (custom ops,
``quantized_decomposed``) are allowed: they have their own kernels. Raw
``torch.ops.aten`` targets are rejected: edge graphs use ``ops.edge``.

``EdgeDialectVerifier`` is what ``ExportedProgram`` runs on construction
(op kinds only); ``verify_edge_ops`` adds the core-opset check, with the
exceptions a caller allows.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import torch
from torch._export.verifier import SpecViolationError, Verifier
from torch._ops import HigherOrderOperator, OpOverload

from ember.exir.control_flow import is_control_flow, subgraphs
from ember.exir.dialects.edge._ops import EdgeOpOverload
from ember.exir.operator.kernel_ops import EMBER_KERNEL_OPS

_ALLOWED_HIGHER_ORDER = frozenset({"executorch_call_delegate", "cond", "while_loop"})


def is_core_aten(op: OpOverload, exceptions: Collection[OpOverload] = ()) -> bool:
    if op.namespace != "aten" or op in exceptions or op in EMBER_KERNEL_OPS:
        return True
    return torch.Tag.core in op.tags or torch.Tag.view_copy in op.tags


def _check_kind(op: Any) -> None:
    if isinstance(op, OpOverload):
        raise SpecViolationError(
            f"Operator {op} is not an edge op: use ember.exir.dialects._ops.ops.edge"
        )
    if isinstance(op, HigherOrderOperator) and op.name() not in _ALLOWED_HIGHER_ORDER:
        raise SpecViolationError(
            f"Higher-order operator {op.name()} is not supported in the edge dialect"
        )


def verify_edge_ops(gm: torch.fx.GraphModule, exceptions: Collection[OpOverload] = ()) -> None:
    """Raise ``SpecViolationError`` naming the first op outside the edge opset."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        _check_kind(node.target)
        op = node.target
        if is_control_flow(node):
            for sub in subgraphs(node):
                verify_edge_ops(sub, exceptions)
            continue
        if isinstance(op, EdgeOpOverload) and not is_core_aten(op.op, exceptions):
            raise SpecViolationError(
                f"Operator {op.op} (node {node.name}) is not in the core ATen opset; "
                "the edge dialect allows core ATen ops, their *_copy view variants "
                "and non-aten ops (list it in "
                "EdgeCompileConfig._core_aten_ops_exception_list to allow it)"
            )


class EdgeDialectVerifier(Verifier):
    dialect = "EMBER_EDGE"

    def allowed_op_types(self) -> tuple[type[Any], ...]:
        return (OpOverload, HigherOrderOperator, EdgeOpOverload)

    def allowed_getattr_types(self) -> tuple[type[Any], ...]:
        return (torch.fx.GraphModule, torch.nn.Module, torch.Tensor, torch.utils._pytree.TreeSpec)

    def check_valid_op(self, op: Any) -> None:
        _check_kind(op)
