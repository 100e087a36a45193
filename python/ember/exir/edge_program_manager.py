"""``to_edge`` and ``EdgeProgramManager``: one or more methods in the edge dialect."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torch.export import ExportedProgram

from ember.exir.config import EdgeCompileConfig, ExecutorchBackendConfig
from ember.exir.emit.constant_methods import check_constant_methods
from ember.exir.executorch_program_manager import ExecutorchProgramManager
from ember.exir.pipeline import (
    GraphPass,
    to_edge_program,
    to_out_variant_program,
    transform_edge_program,
)


class EdgeProgramManager:
    """The edge-dialect programs of a model, one per method name."""

    def __init__(
        self,
        edge_programs: dict[str, ExportedProgram],
        compile_config: EdgeCompileConfig | None = None,
        constant_methods: dict[str, Any] | None = None,
    ) -> None:
        self._programs = dict(edge_programs)
        self.compile_config = compile_config or EdgeCompileConfig()
        self._constant_methods = check_constant_methods(constant_methods, list(self._programs))

    @property
    def methods(self) -> list[str]:
        return list(self._programs)

    @property
    def constant_methods(self) -> dict[str, Any]:
        """Methods that return a value fixed at export (``to_edge(constant_methods=...)``)."""
        return dict(self._constant_methods)

    def exported_program(self, method_name: str = "forward") -> ExportedProgram:
        if method_name not in self._programs:
            raise KeyError(f"no method '{method_name}'; methods are {self.methods}")
        return self._programs[method_name]

    def transform(self, passes: Iterable[GraphPass]) -> EdgeProgramManager:
        """Run passes on every method; the result must still be edge dialect."""
        passes = list(passes)
        return EdgeProgramManager(
            {
                name: transform_edge_program(ep, passes, self.compile_config)
                for name, ep in self._programs.items()
            },
            self.compile_config,
            self._constant_methods,
        )

    def to_backend(self, partitioner: Any) -> EdgeProgramManager:
        """Lower what ``partitioner`` tags, in every method, to its backends.

        ``partitioner``: one ``Partitioner`` (or a list, applied in turn) for
        every method, or a dict from method name to those; methods left out
        of the dict are kept as they are."""
        from ember.exir.backend.backend_api import to_backend

        programs = {}
        for name, ep in self._programs.items():
            chosen = partitioner.get(name, []) if isinstance(partitioner, dict) else partitioner
            for p in chosen if isinstance(chosen, (list, tuple)) else [chosen]:
                ep = to_backend(ep, p)
            programs[name] = ep
        return EdgeProgramManager(programs, self.compile_config, self._constant_methods)

    def to_executorch(
        self, config: ExecutorchBackendConfig | None = None
    ) -> ExecutorchProgramManager:
        config = config or ExecutorchBackendConfig()
        programs, plans = {}, {}
        for name, ep in self._programs.items():
            programs[name], plans[name] = to_out_variant_program(ep, config, name)
        return ExecutorchProgramManager(programs, plans, config, self._constant_methods)


def to_edge(
    programs: ExportedProgram | dict[str, ExportedProgram],
    constant_methods: dict[str, Any] | None = None,
    compile_config: EdgeCompileConfig | None = None,
) -> EdgeProgramManager:
    """Lower exported ATen programs to the edge dialect. A single program is
    the method ``forward``; a dict gives one method per key.
    ``constant_methods`` (name -> bool/int/float/str/list/tensor) become
    methods without inputs that return the value (metadata for runners)."""
    if isinstance(programs, ExportedProgram):
        programs = {"forward": programs}
    config = compile_config or EdgeCompileConfig()
    checked = check_constant_methods(constant_methods, list(programs))
    return EdgeProgramManager(
        {name: to_edge_program(ep, config) for name, ep in programs.items()}, config, checked
    )
