"""``XnnpackPartitioner``: tags every node XNNPACK can run (``ops.refusal``)
for ``EmberXnnpackBackend``, plus the constants those nodes read, so the
delegate owns its weights and packs them at load time.

Constant sub-expressions (``permute_copy`` of a weight, say) are tagged with
their consumers: ``preprocess`` evaluates them ahead of time. What is left
untagged runs on the portable kernels; ``report()`` lists each such node
with the reason.

Layout: rank-4 values connected (through layout-free ops) to a convolution,
pooling or resize are NHWC inside their delegate (tag ``xnnpack_nhwc``);
other rank-4 values, such as attention scores, keep the program's layout
(tag ``xnnpack``), so no transposes are paid for them and softmax over the
last dim and their reshapes can run on XNNPACK. The layout reaches
``preprocess`` as the compile spec ``layout``.
"""

from __future__ import annotations

from torch.export import ExportedProgram

from ember.backends.xnnpack.ops import LAYOUT_FREE, SPATIAL, op_name, refusal, value
from ember.backends.xnnpack.preprocess import BACKEND_ID
from ember.exir.backend.compile_spec_schema import CompileSpec
from ember.exir.backend.partitioner import (
    DELEGATION_TAG,
    DelegationSpec,
    Partitioner,
    PartitionResult,
)
from ember.exir.backend.subgraph import CONSTANT_KINDS

NHWC_TAG = "xnnpack_nhwc"
NATURAL_TAG = "xnnpack"
# Constant expressions preprocess evaluates (how export reshapes a weight);
# anything else computed from constants stays outside the delegate.
_WEIGHT_TRANSFORMS = {
    "aten.permute_copy.default",
    "aten.view_copy.default",
    "aten.t_copy.default",
    "aten.squeeze_copy.dims",
    "aten.unsqueeze_copy.default",
    "aten.clone.default",
    "aten._to_copy.default",
}
_BOOKKEEPING = ("getitem", "_assert_scalar", "sym_size")


class XnnpackPartitioner(Partitioner):
    """``exclude``: op names (``"aten.addmm.default"``) to leave on the
    portable kernels even where XNNPACK could run them; Debian's XNNPACK
    build is slower than Ember's portable GEMM on dense layers (see
    docs/xnnpack.md), so a model may be faster with them excluded."""

    def __init__(
        self, compile_specs: list[CompileSpec] | None = None, exclude: tuple[str, ...] = ()
    ) -> None:
        self.exclude = frozenset(exclude)
        specs = list(compile_specs or [])
        self.delegation_specs = {
            NHWC_TAG: DelegationSpec(BACKEND_ID, specs + [CompileSpec("layout", b"nhwc")]),
            NATURAL_TAG: DelegationSpec(BACKEND_ID, specs + [CompileSpec("layout", b"natural")]),
        }
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
                and s.kind in CONSTANT_KINDS
                and s.target not in mutated
                for s in signature.input_specs
            )
        }
        for node in graph.nodes:
            if (
                node.op == "call_function"
                and op_name(node) in _WEIGHT_TRANSFORMS
                and node.all_input_nodes
                and all(u in constant for u in node.all_input_nodes)
            ):
                constant.add(node)

        def is_constant(n: object) -> bool:
            return n in constant

        spatial = _spatial_nodes(graph, constant)
        tag_of: dict = {}
        self._refused = []
        for node in graph.nodes:
            if node.op != "call_function" or node in constant:
                continue
            nhwc = node in spatial or any(
                u in spatial and _rank4(u, constant) for u in node.all_input_nodes
            ) or (
                not _has_rank4(node, constant)
                and any(tag_of.get(u) == NHWC_TAG for u in node.all_input_nodes)
            )
            why = (
                "excluded by the partitioner's settings"
                if op_name(node) in self.exclude
                else refusal(node, is_constant, nhwc)
            )
            if why is None:
                tag_of[node] = NHWC_TAG if nhwc else NATURAL_TAG
            elif not op_name(node).endswith(_BOOKKEEPING) and "getitem" not in op_name(node):
                self._refused.append((node.name, op_name(node), why))
        # Constants and constant expressions read only by nodes of one tag go too.
        for node in reversed(list(graph.nodes)):
            if node in constant and node.users:
                tags = {tag_of.get(u) for u in node.users}
                if len(tags) == 1 and None not in tags:
                    tag_of[node] = tags.pop()
        for node, tag in tag_of.items():
            node.meta[DELEGATION_TAG] = tag
        return PartitionResult(exported_program, dict(self.delegation_specs))

    @property
    def delegation_spec(self) -> DelegationSpec:
        """The spec of NHWC delegates (the common case for CNNs)."""
        return self.delegation_specs[NHWC_TAG]

    def report(self) -> list[tuple[str, str, str]]:
        """(node, op, reason) for each node of the last partition left to
        the portable kernels."""
        return list(self._refused)


def _rank4(node: object, constant: set) -> bool:
    v = value(node)
    return node not in constant and hasattr(v, "dim") and v.dim() == 4


def _has_rank4(node, constant: set) -> bool:
    v = value(node)
    if isinstance(v, (tuple, list)):
        v = v[0] if v else None
    return (hasattr(v, "dim") and v.dim() == 4) or any(
        _rank4(u, constant) for u in node.all_input_nodes
    )


def _spatial_nodes(graph, constant: set) -> set:
    """Nodes whose rank-4 values must be NHWC: those connected through
    layout-free ops to a spatial op (union-find over the graph)."""
    parent: dict = {}

    def find(n):
        parent.setdefault(n, n)
        while parent[n] is not n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    def union(a, b) -> None:
        parent[find(a)] = find(b)

    seeds = []
    for node in graph.nodes:
        if node.op != "call_function" or node in constant:
            continue
        name = op_name(node)
        if name in SPATIAL:
            seeds.append(node)
        if name in SPATIAL or name in LAYOUT_FREE or "getitem" in name:
            for u in node.all_input_nodes:
                if _rank4(u, constant):
                    union(node, u)
    roots = {find(n) for n in seeds}
    return {n for n in parent if find(n) in roots}
