"""``to_edge``, ``to_edge_transform_and_lower`` and ``EdgeProgramManager``:
one or more methods in the edge dialect."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from torch._ops import OpOverload
from torch.export import ExportedProgram

from ember.exir.config import EdgeCompileConfig, ExecutorchBackendConfig
from ember.exir.emit.constant_methods import check_constant_methods
from ember.exir.dialects.edge._ops import EdgeOpOverload
from ember.exir.executorch_program_manager import ExecutorchProgramManager
from ember.exir.pipeline import (
    GraphPass,
    to_edge_program,
    to_out_variant_program,
    transform_edge_program,
)

CONSTANT_METHODS_ISSUE = "issue #20"


class EdgeProgramManager:
    """The edge-dialect programs of a model, one per method name.

    ``ops_set_to_not_decompose``: ops kept whole beyond the core ATen
    opset (``EdgeCompileConfig.preserve_ops``, a partitioner's
    ``ops_to_not_decompose``): ``transform`` lets them through the edge
    verifier."""

    def __init__(
        self,
        edge_programs: dict[str, ExportedProgram],
        constant_methods: dict[str, Any] | EdgeCompileConfig | None = None,
        compile_config: EdgeCompileConfig | None = None,
        ops_set_to_not_decompose: Iterable[OpOverload] | None = None,
    ) -> None:
        if isinstance(constant_methods, EdgeCompileConfig):  # the earlier (programs, config)
            constant_methods, compile_config = None, constant_methods
        self._programs = dict(edge_programs)
        self._constant_methods = check_constant_methods(constant_methods, list(self._programs))
        self.compile_config = compile_config or EdgeCompileConfig()
        self._ops_not_decomposed = set(ops_set_to_not_decompose or ())

    @property
    def methods(self) -> list[str]:
        return list(self._programs)

    @property
    def config_methods(self) -> list[str]:
        """Methods returning constants (``constant_methods``)."""
        return list(self._constant_methods)

    @property
    def constant_methods(self) -> dict[str, Any]:
        """Methods that return a value fixed at export (``to_edge(constant_methods=...)``)."""
        return dict(self._constant_methods)

    def exported_program(self, method_name: str = "forward") -> ExportedProgram:
        if method_name not in self._programs:
            raise KeyError(f"no method '{method_name}'; methods are {self.methods}")
        return self._programs[method_name]

    def transform(
        self,
        passes: Iterable[GraphPass] | dict[str, Iterable[GraphPass]],
        compile_config: EdgeCompileConfig | None = None,
    ) -> EdgeProgramManager:
        """Run passes on every method (or, with a dict, on the methods it
        names); the result must still be edge dialect (checked against
        ``compile_config``, by default this manager's)."""
        config = compile_config or self.compile_config
        programs = {}
        for name, ep in self._programs.items():
            chosen = passes.get(name) if isinstance(passes, dict) else passes
            programs[name] = (
                ep
                if chosen is None
                else transform_edge_program(ep, list(chosen), config, self._ops_not_decomposed)
            )
        return EdgeProgramManager(programs, self._constant_methods, config, self._ops_not_decomposed)

    def to_backend(self, partitioner: Any) -> EdgeProgramManager:
        """Lower what ``partitioner`` tags, in every method, to its backends.

        ``partitioner``: one ``Partitioner`` (or a list, applied in turn) for
        every method, or a dict from method name to those; methods left out
        of the dict are kept as they are."""
        from ember.exir.backend.backend_api import to_backend

        programs = {}
        for name, ep in self._programs.items():
            for p in _partitioners_of(partitioner, name):
                ep = to_backend(ep, p)
            programs[name] = ep
        return EdgeProgramManager(
            programs, self._constant_methods, self.compile_config, self._ops_not_decomposed
        )

    def to_executorch(
        self, config: ExecutorchBackendConfig | None = None
    ) -> ExecutorchProgramManager:
        config = config or ExecutorchBackendConfig()
        dim_order_ops = not self.compile_config._skip_dim_order
        programs, plans = {}, {}
        for name, ep in self._programs.items():
            programs[name], plans[name] = to_out_variant_program(ep, config, name, dim_order_ops)
        return ExecutorchProgramManager(programs, plans, config, self._constant_methods)


def _partitioners_of(partitioner: Any, method: str) -> list[Any]:
    chosen = partitioner.get(method, []) if isinstance(partitioner, dict) else partitioner
    if chosen is None:
        return []
    return list(chosen) if isinstance(chosen, (list, tuple)) else [chosen]


def _as_programs(
    programs: ExportedProgram | dict[str, ExportedProgram],
) -> dict[str, ExportedProgram]:
    """A single program is the method ``forward``; a dict gives one method per key."""
    if isinstance(programs, ExportedProgram):
        return {"forward": programs}
    return dict(programs)


def to_edge(
    programs: ExportedProgram | dict[str, ExportedProgram],
    constant_methods: dict[str, Any] | EdgeCompileConfig | None = None,
    compile_config: EdgeCompileConfig | None = None,
) -> EdgeProgramManager:
    """Lower exported ATen programs to the edge dialect. A single program is
    the method ``forward``; a dict gives one method per key.
    ``constant_methods`` (name -> bool/int/float/str/list/tensor) become
    methods without inputs that return the value (metadata for runners); an
    ``EdgeCompileConfig`` in its place is taken as ``compile_config``."""
    if isinstance(constant_methods, EdgeCompileConfig):  # the earlier (programs, config)
        constant_methods, compile_config = None, constant_methods
    config = compile_config or EdgeCompileConfig()
    return EdgeProgramManager(
        {name: to_edge_program(ep, config) for name, ep in _as_programs(programs).items()},
        constant_methods,
        config,
        config.preserve_ops,
    )


# ---------------------------------------------------------------------------
# to_edge_transform_and_lower


def _ops_partitioners_keep(
    ep: ExportedProgram, partitioners: Sequence[Any]
) -> set[OpOverload]:
    """The ops the partitioners ask to keep whole (``ops_to_not_decompose(ep)``
    -> (ops, node filter or None)). With a filter, an op is kept only if the
    filter accepts every node of it in ``ep`` (decomposition is per op, not
    per node)."""
    kept: set[OpOverload] = set()
    for p in partitioners:
        offer = getattr(p, "ops_to_not_decompose", None)
        if offer is None:
            continue
        result = offer(ep)
        ops, node_filter = (result, None) if not isinstance(result, tuple) else result
        for op in ops:
            nodes = [n for n in ep.graph.nodes if n.op == "call_function" and n.target == op]
            if node_filter is None or all(node_filter(n) for n in nodes):
                kept.add(op)
    return kept


def _preserved_ops_left(ep: ExportedProgram, ops: set[OpOverload]) -> set[OpOverload]:
    """Which of ``ops`` are still in the (outer, not delegated) edge graph."""
    left = set()
    for node in ep.graph.nodes:
        target = node.target
        if node.op == "call_function" and isinstance(target, EdgeOpOverload) and target.op in ops:
            left.add(target.op)
    return left


def to_edge_transform_and_lower(
    programs: ExportedProgram | dict[str, ExportedProgram],
    transform_passes: Sequence[GraphPass] | dict[str, Sequence[GraphPass]] | None = None,
    partitioner: Any = None,
    constant_methods: dict[str, Any] | None = None,
    compile_config: EdgeCompileConfig | None = None,
) -> EdgeProgramManager:
    """``to_edge``, then ``transform(transform_passes)``, then
    ``to_backend`` with each partitioner in turn, in one call.

    ``partitioner``: a list of partitioners for every method (one alone is
    taken as a list of one), or a dict from method name to such a list.
    Ops a partitioner returns from ``ops_to_not_decompose(ep)`` are kept
    whole in the edge graph so it can claim them (a linear layer as one
    node, say); those it then leaves unclaimed are decomposed after all
    (the method is lowered again without them), so the portable kernels can
    run what no backend took. Ops of ``compile_config.preserve_ops`` stay
    whole in any case. ``constant_methods``: as ``to_edge``'s."""
    config = compile_config or EdgeCompileConfig()
    aten = _as_programs(programs)
    lowered: dict[str, ExportedProgram] = {}
    kept_all: set[OpOverload] = set(config.preserve_ops)
    for name, ep in aten.items():
        partitioners = _partitioners_of(partitioner, name)
        passes = (
            transform_passes.get(name) if isinstance(transform_passes, dict) else transform_passes
        )
        wanted = _ops_partitioners_keep(ep, partitioners) - set(config.preserve_ops)
        while True:
            edge = EdgeProgramManager(
                {name: to_edge_program(ep, config, wanted)}, None, config,
                set(config.preserve_ops) | wanted,
            )
            if passes:
                edge = edge.transform(list(passes))
            if partitioners:
                edge = edge.to_backend(partitioners)
            unclaimed = _preserved_ops_left(edge.exported_program(name), wanted)
            if not unclaimed:
                break
            wanted -= unclaimed  # Decompose what no backend took, and lower again.
        lowered[name] = edge.exported_program(name)
        kept_all |= wanted
    return EdgeProgramManager(lowered, constant_methods, config, kept_all)
