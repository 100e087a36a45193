"""Decompose the non-core ATen ops that ``run_decompositions`` leaves.

``ExportedProgram.run_decompositions()`` applies PyTorch's core-ATen table,
which leaves some ops mainstream models produce (``linalg_vector_norm`` in
speech encoders and ConvNeXt-V2, for one) although PyTorch's full
decomposition table (``torch._decomp.decomposition_table``) has a
decomposition for them. This pass applies those (and Ember's own, ``ember_decompositions``, for ops
PyTorch has none for), repeatedly, until only core
ops, ops Ember has its own kernel for (``EMBER_KERNEL_OPS``) and ops without a
decomposition remain; the edge verifier then names any of the last kind.
Decompositions that end in ``prims`` ops (which have no out variants, so no
kernels) are not applied.
"""

from __future__ import annotations

from collections.abc import Collection

import torch
from torch._decomp import core_aten_decompositions, decomposition_table
from torch._ops import OpOverload
from torch.export import ExportedProgram

from ember.exir.operator.kernel_ops import EMBER_KERNEL_OPS
from ember.exir.passes.ember_decompositions import EMBER_DECOMPOSITIONS

_MAX_ROUNDS = 6  # a decomposition can produce ops that decompose again, or be retried


def _core(op: OpOverload) -> bool:
    return torch.Tag.core in op.tags or torch.Tag.view_copy in op.tags


def _left_to_decompose(ep: ExportedProgram, keep: Collection[OpOverload]) -> set[OpOverload]:
    ops = set()
    for node in ep.graph_module.graph.nodes:
        op = node.target
        if (
            node.op == "call_function"
            and isinstance(op, OpOverload)
            and op.namespace == "aten"
            and not _core(op)
            and op not in EMBER_KERNEL_OPS
            and op not in keep
            and (op in EMBER_DECOMPOSITIONS or op in decomposition_table)
        ):
            ops.add(op)
    return ops


def decompose_non_core(
    ep: ExportedProgram,
    keep: Collection[OpOverload] = (),
    preserve: Collection[OpOverload] = (),
) -> ExportedProgram:
    """``ep`` with every non-core ATen op PyTorch can decompose decomposed,
    except those in ``keep`` (the ops a user allows in the edge dialect with
    ``EdgeCompileConfig._core_aten_ops_exception_list``). ``preserve``: ops
    (``EdgeCompileConfig.preserve_ops``) the core table must not decompose
    either when a round re-runs it."""
    unusable: set[OpOverload] = set()
    for _ in range(_MAX_ROUNDS):
        ops = _left_to_decompose(ep, keep) - unusable
        if not ops:
            break
        decomposed = _decompose(ep, ops, preserve)
        if decomposed is None:
            # One of the decompositions cannot be traced functionally
            # (diagonal_scatter's writes through prims.copy_to): find which.
            unusable |= {op for op in ops if _decompose(ep, {op}, preserve) is None}
            continue
        # Some of PyTorch's decompositions end in prims ops (lgamma ->
        # prims.lgamma), which have no out variants: keep those ops as they
        # are (the edge verifier names them) and apply the others.
        lowered = _ops_lowered_to_prims(decomposed)
        to_prims = {op for op in ops if str(op) in lowered}
        if to_prims:
            unusable |= to_prims
            continue
        ep = decomposed
    return ep


def _decompose(
    ep: ExportedProgram, ops: set[OpOverload], preserve: Collection[OpOverload] = ()
) -> ExportedProgram | None:
    table = core_aten_decompositions()
    for op in preserve:
        table.pop(op, None)
    for op in ops:
        table[op] = EMBER_DECOMPOSITIONS.get(op) or decomposition_table[op]
    try:
        return ep.run_decompositions(table)
    except Exception:  # noqa: BLE001 - PyTorch raises many kinds here; the op then stays
        return None


def _ops_lowered_to_prims(ep: ExportedProgram) -> set[str]:
    """Names of the ops whose decomposition left prims ops (the meta entry
    is not always the very OpOverload object the graph had)."""
    return {
        str(node.meta.get("original_aten"))
        for node in ep.graph_module.graph.nodes
        if node.op == "call_function"
        and isinstance(node.target, OpOverload)
        and node.target.namespace == "prims"
    }
