"""Drop the error checks export threads through effect tokens.

``torch.linalg.inv``, ``linalg.cholesky``, ``linalg.solve`` and friends export
as their ``*_ex`` op (which returns an ``info`` tensor) followed by
``with_effects(token, aten._linalg_check_errors, info, ...)``: a higher-order
op over a token input and output that raises in eager when ``info`` is
nonzero (a singular or non-positive-definite input). Ember's kernels report
those cases through the ``info`` outputs as the ``*_ex`` ops do, and a
program cannot raise, so the check is dropped with its tokens: a singular
input gives what the ``*_ex`` op gives (inf/nan values), as in
``torch.linalg.inv_ex``.

Programs whose effect tokens guard any other op keep them (the edge verifier
names the higher-order op).
"""

from __future__ import annotations

import torch
from torch.export import ExportedProgram
from torch.export._remove_effect_tokens_pass import _remove_effect_tokens

_DROPPABLE = frozenset({torch.ops.aten._linalg_check_errors.default})


def _effect_nodes(ep: ExportedProgram) -> list[torch.fx.Node]:
    return [
        n
        for n in ep.graph_module.graph.nodes
        if n.op == "call_function" and n.target is torch.ops.higher_order.with_effects
    ]


def drop_linalg_error_checks(ep: ExportedProgram) -> ExportedProgram:
    """``ep`` without its ``_linalg_check_errors`` effects and tokens (in
    place), or ``ep`` unchanged when it has other effects or none."""
    effects = _effect_nodes(ep)
    if not effects or any(n.args[1] not in _DROPPABLE for n in effects):
        return ep
    ep = _remove_effect_tokens(ep)
    gm = ep.graph_module
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in _DROPPABLE:
            gm.graph.erase_node(node)
    gm.recompile()
    return ep
