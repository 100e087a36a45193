"""The ExportedProgram of the out-variant ("executorch") dialect.

Out-variant ops mutate their ``out`` argument, which torch's base verifier
refuses for every dialect but training, so this program class checks the
graph itself: calls are out-variant ops, ``alloc``, ``getitem``, a
delegate call or arithmetic on symbolic sizes, and every op that writes an
``out`` gets it from ``alloc`` or writes a mutable buffer's placeholder
(``passes/mutable_buffers.py``).
"""

from __future__ import annotations

import operator

import torch
from torch._export.verifier import SpecViolationError, Verifier
from torch._ops import HigherOrderOperator, OpOverload
from torch.export import ExportedProgram

from ember.exir.memory import alloc
from ember.exir.operator.schema import out_argument_names
from ember.exir.sym_ops import is_sym_op


class OutVariantDialectVerifier(Verifier):
    dialect = "EMBER_EXECUTORCH"


def check_out_variant_graph(
    gm: torch.fx.GraphModule, mutable: frozenset[str] = frozenset()
) -> None:
    """``mutable``: names of the placeholders of mutated buffers and inputs,
    which ops may write."""
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target in (alloc, operator.getitem):
            continue
        if isinstance(node.target, HigherOrderOperator) or is_sym_op(node.target):
            continue
        if not isinstance(node.target, OpOverload):
            raise SpecViolationError(f"{node.name}: unexpected call target {node.target}")
        outs = out_argument_names(node.target)
        if not outs and node.target._schema.is_mutable:
            raise SpecViolationError(f"{node.name}: {node.target} mutates an input")
        for name in outs:
            arg = node.kwargs.get(name)
            if isinstance(arg, torch.fx.Node) and (
                arg.target is alloc or (arg.op == "placeholder" and arg.name in mutable)
            ):
                continue
            raise SpecViolationError(
                f"{node.name}: out argument '{name}' of {node.target} is not an alloc "
                "or a mutable buffer"
            )


class OutVariantExportedProgram(ExportedProgram):
    """An ExportedProgram whose graph holds out-variant ops and allocs."""

    def validate(self) -> None:
        sig = self.graph_signature
        mutated = set(sig.buffers_to_mutate.values())
        mutable = frozenset(n for n, t in sig.inputs_to_buffers.items() if t in mutated)
        mutable |= frozenset(sig.user_inputs_to_mutate.values())  # inputs mutated in place
        check_out_variant_graph(self.graph_module, mutable)
