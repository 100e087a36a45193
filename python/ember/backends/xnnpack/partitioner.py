"""``XnnpackPartitioner``: tags every node XNNPACK can run (``support.refusal``,
the same check preprocess applies before lowering) for
``EmberXnnpackBackend``, plus the constants those nodes read, so the
delegate owns its weights and packs them at load time.

Constant sub-expressions (``permute_copy`` of a weight, say) are tagged with
their consumers: ``preprocess`` evaluates them ahead of time. A node is
claimed only if every constant it relies on goes into its delegate: a weight
that untagged code also reads stays in the outer program and would reach
the delegate as a run-time input, so such a node stays portable. What is
left untagged runs on the portable kernels; ``report()`` lists each such
node with the reason.

Layout: rank-4 values connected (through layout-free ops) to a convolution,
pooling or resize, or stored channels-last, are NHWC inside their delegate
(tag ``xnnpack_nhwc``); other rank-4 values, such as attention scores, keep
the program's layout (tag ``xnnpack``), so no transposes are paid for them
and softmax over the last dim and their reshapes can run on XNNPACK. The
layout reaches ``preprocess`` as the compile spec ``layout``.
"""

from __future__ import annotations

import torch
from torch.export import ExportedProgram

from ember.backends.xnnpack.node_info import CHANNELS_LAST, dim_order, op_name, value
from ember.backends.xnnpack.preprocess import BACKEND_ID
from ember.backends.xnnpack.support import (
    CONSTANT_EXPRESSIONS,
    LAYOUT_FREE_OPS,
    SPATIAL_OPS,
    refusal,
)
from ember.exir.backend.compile_spec_schema import CompileSpec
from ember.exir.backend.partitioner import (
    DELEGATION_TAG,
    DelegationSpec,
    Partitioner,
    PartitionResult,
)
from ember.exir.backend.subgraph import CONSTANT_KINDS

# Why a node between pt2e's dequantize and quantize ops stays out: to_executorch
# fuses such chains into integer ops (ember.exir.passes.fuse_quantized_ops),
# which this XNNPACK's qs8/qc8 operators are slower than (BENCHMARKS.md,
# bench/models/xnnpack_qs8_compare.py); claimed in float, the chain could not
# be fused and would run dequantized.
QUANTIZED_CHAIN = "part of a quantized chain: Ember's integer kernels run it"
NHWC_TAG = "xnnpack_nhwc"
NATURAL_TAG = "xnnpack"
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
        constant = _constant_nodes(exported_program)

        def is_constant(n: object) -> bool:
            return n in constant

        spatial = _spatial_nodes(graph, constant)
        claimed: dict[torch.fx.Node, str] = {}
        nhwc_of: dict[torch.fx.Node, bool] = {}
        refused: list[tuple[torch.fx.Node, str]] = []
        for node in graph.nodes:
            if node.op != "call_function" or node in constant:
                continue
            nhwc = node in spatial or any(
                u in spatial and _rank4(u, constant) for u in node.all_input_nodes
            ) or (
                not _has_rank4(node, constant)
                and any(claimed.get(u) == NHWC_TAG for u in node.all_input_nodes)
            )
            why = (
                "excluded by the partitioner's settings"
                if op_name(node) in self.exclude
                else QUANTIZED_CHAIN if _in_quantized_chain(node)
                else refusal(node, is_constant, nhwc)
            )
            if why is None:
                claimed[node] = NHWC_TAG if nhwc else NATURAL_TAG
                nhwc_of[node] = nhwc
            else:
                refused.append((node, why))
        # A claimed node's constants must go with it (preprocess needs their
        # values): re-check with "constant" meaning "tagged like the node";
        # dropping a node can untag a constant another node reads, so repeat.
        while True:
            tag_of = _tag_constants(graph, claimed, constant)
            dropped = []
            for node, tag in claimed.items():
                why = refusal(node, _delivered(constant, tag_of, tag), nhwc_of[node])
                if why is not None:
                    shared = [u.name for u in node.all_input_nodes
                              if u in constant and tag_of.get(u) != tag]
                    if shared:
                        why += f": constant {', '.join(shared)} is also read outside the delegate"
                    dropped.append((node, why))
            if not dropped:
                break
            for node, why in dropped:
                del claimed[node]
                refused.append((node, why))
        order = {n: i for i, n in enumerate(graph.nodes)}
        self._refused = [
            (node.name, op_name(node), why)
            for node, why in sorted(refused, key=lambda r: order[r[0]])
            if not op_name(node).endswith(_BOOKKEEPING) and "getitem" not in op_name(node)
        ]
        for node, tag in tag_of.items():
            node.meta[DELEGATION_TAG] = tag
        return PartitionResult(exported_program, dict(self.delegation_specs))

    def ops_to_not_decompose(
        self, exported_program: ExportedProgram
    ) -> tuple[list[torch._ops.OpOverload], None]:
        """Ops ``to_edge_transform_and_lower`` keeps whole for this partitioner:
        ``aten.linear`` (one FullyConnected, the weight as it is, no transpose
        to fold); ones it leaves unclaimed are decomposed after all."""
        ops = [torch.ops.aten.linear.default]
        return [op for op in ops if f"aten.{op._schema.name.split('::')[1]}.default"
                not in self.exclude], None

    @property
    def delegation_spec(self) -> DelegationSpec:
        """The spec of NHWC delegates (the common case for CNNs)."""
        return self.delegation_specs[NHWC_TAG]

    def report(self) -> list[tuple[str, str, str]]:
        """(node, op, reason) for each node of the last partition left to
        the portable kernels."""
        return list(self._refused)


# Ops a quantized chain may pass through between its dequantize, the op and
# its quantize (how export reshapes a linear layer's input and weight).
_VIEWS = frozenset({
    "aten.view_copy.default", "aten.permute_copy.default", "aten.t_copy.default",
    "aten.clone.default", "aten.squeeze_copy.dims", "aten.unsqueeze_copy.default",
    "aten.expand_copy.default",
})


def _in_quantized_chain(node: torch.fx.Node) -> bool:
    """Whether ``node`` computes inside a pt2e chain: it reads a dequantized
    value, or its result is statically quantized (``quantize_per_tensor``
    with a constant scale; the ``.tensor`` form, which dynamic quantization
    puts before a linear layer, belongs to that layer's chain), looking
    through views either way."""
    def dequantized(n: torch.fx.Node) -> bool:
        name = op_name(n) if n.op == "call_function" else ""
        if name.startswith("quantized_decomposed.dequantize_"):
            return True
        return name in _VIEWS and any(dequantized(u) for u in n.all_input_nodes)

    def quantized(n: torch.fx.Node) -> bool:
        for user in n.users:
            name = op_name(user) if user.op == "call_function" else ""
            if name in ("quantized_decomposed.quantize_per_tensor.default",
                        "quantized_decomposed.quantize_per_channel.default"):
                return True
            if name in _VIEWS and quantized(user):
                return True
        return False

    if op_name(node).startswith("quantized_decomposed."):
        return False  # refused by the common checks (int8 values) with their own reason
    return any(dequantized(u) for u in node.all_input_nodes) or quantized(node)


def _constant_nodes(program: ExportedProgram) -> set:
    """Placeholders known ahead of time (parameters, buffers never mutated,
    constant tensors) and the constant expressions over them."""
    graph = program.graph_module.graph
    signature = program.graph_signature
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
            and op_name(node) in CONSTANT_EXPRESSIONS
            and node.all_input_nodes
            and all(u in constant for u in node.all_input_nodes)
        ):
            constant.add(node)
    return constant


def _delivered(constant: set, tag_of: dict, tag: str):
    """Whether a value reaches a delegate of ``tag`` as a constant."""
    return lambda n: n in constant and tag_of.get(n) == tag


def _tag_constants(graph: torch.fx.Graph, claimed: dict, constant: set) -> dict:
    """``claimed`` plus the constants (and constant expressions) that only
    nodes of one tag read; an expression goes only where its inputs go."""
    tag_of = dict(claimed)
    for node in reversed(list(graph.nodes)):
        if node in constant and node.users:
            tags = {tag_of.get(u) for u in node.users}
            if len(tags) == 1 and None not in tags:
                tag_of[node] = tags.pop()
    for node in graph.nodes:
        if (
            node in constant
            and node in tag_of
            and node.op == "call_function"
            and any(tag_of.get(u) != tag_of[node] for u in node.all_input_nodes)
        ):
            del tag_of[node]
    return tag_of


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


def _channels_last(node: object, constant: set) -> bool:
    v = value(node)
    if isinstance(v, (tuple, list)):
        v = v[0] if v else None
    return (node not in constant and isinstance(v, torch.Tensor) and v.dim() == 4
            and dim_order(v) == CHANNELS_LAST)


def _spatial_nodes(graph, constant: set) -> set:
    """Nodes whose rank-4 values must be NHWC: those connected through
    layout-free ops to a spatial op or to a channels-last value (whose
    memory is NHWC already; a natural-layout delegate could not bind it).
    Union-find over the graph."""
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
        free = name in LAYOUT_FREE_OPS or "getitem" in name
        if name in SPATIAL_OPS or (
            free and (_channels_last(node, constant)
                      or any(_channels_last(u, constant) for u in node.all_input_nodes))
        ):
            seeds.append(node)
        if name in SPATIAL_OPS or free:
            for u in node.all_input_nodes:
                if _rank4(u, constant):
                    union(node, u)
    roots = {find(n) for n in seeds}
    return {n for n in parent if find(n) in roots}
