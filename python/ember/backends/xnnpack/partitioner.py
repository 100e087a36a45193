"""``XnnpackPartitioner``: tags every node XNNPACK can run (``ops.refusal``)
for ``EmberXnnpackBackend``, plus the constants those nodes read, so the
delegate owns its weights and packs them at load time.

Constant sub-expressions (``permute_copy`` of a weight, say) are tagged with
their consumers: ``preprocess`` evaluates them ahead of time. What is left
untagged runs on the portable kernels; ``report()`` lists each such node
with the reason.
"""

from __future__ import annotations

from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from ember.backends.xnnpack.ops import op_name, refusal
from ember.backends.xnnpack.preprocess import BACKEND_ID
from ember.exir.backend.compile_spec_schema import CompileSpec
from ember.exir.backend.partitioner import (
    DELEGATION_TAG,
    DelegationSpec,
    Partitioner,
    PartitionResult,
)

_CONSTANT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
_BOOKKEEPING = ("getitem", "_assert_scalar", "sym_size")


class XnnpackPartitioner(Partitioner):
    def __init__(self, compile_specs: list[CompileSpec] | None = None) -> None:
        self.delegation_spec = DelegationSpec(BACKEND_ID, list(compile_specs or []))
        self._refused: list[tuple[str, str, str]] = []

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        graph = exported_program.graph_module.graph
        signature = exported_program.graph_signature
        mutated = set(signature.buffers_to_mutate.values())
        constant = {
            node
            for node in graph.nodes
            if node.op == "placeholder"
            and any(
                getattr(s.arg, "name", None) == node.name
                and s.kind in _CONSTANT_KINDS
                and s.target not in mutated
                for s in signature.input_specs
            )
        }
        for node in graph.nodes:
            if (
                node.op == "call_function"
                and node.all_input_nodes
                and all(u in constant for u in node.all_input_nodes)
            ):
                constant.add(node)

        def is_constant(n: object) -> bool:
            return n in constant

        tag = "xnnpack"
        tagged = set()
        self._refused = []
        for node in graph.nodes:
            if node.op != "call_function" or node in constant:
                continue
            why = refusal(node, is_constant)
            if why is None:
                tagged.add(node)
            elif not op_name(node).endswith(_BOOKKEEPING) and "getitem" not in op_name(node):
                self._refused.append((node.name, op_name(node), why))
        # Constants and constant expressions read only by tagged nodes go too.
        for node in reversed(list(graph.nodes)):
            if node in constant and node.users and all(u in tagged for u in node.users):
                tagged.add(node)
        for node in tagged:
            node.meta[DELEGATION_TAG] = tag
        return PartitionResult(exported_program, {tag: self.delegation_spec})

    def report(self) -> list[tuple[str, str, str]]:
        """(node, op, reason) for each node of the last partition left to
        the portable kernels."""
        return list(self._refused)
