"""``ExecutorchProgramManager``: out-variant programs, memory plans, the .pte bytes."""

from __future__ import annotations

import functools
import os
from typing import Any

from torch.export import ExportedProgram

from ember.exir.config import ExecutorchBackendConfig
from ember.exir.emit import EmittedProgram, emit_program
from ember.exir.passes.memory_planning import MemoryPlan


class ExecutorchProgramManager:
    """The lowered methods of a model, ready to be written as a ``.pte``."""

    def __init__(
        self,
        programs: dict[str, ExportedProgram],
        plans: dict[str, MemoryPlan],
        config: ExecutorchBackendConfig,
        constant_methods: dict[str, Any] | None = None,
    ) -> None:
        self._programs = programs
        self._plans = plans
        self.config = config
        self._constant_methods = dict(constant_methods or {})

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

    def memory_plan(self, method_name: str = "forward") -> MemoryPlan:
        return self._plans[method_name]

    @functools.cached_property
    def emitted(self) -> EmittedProgram:
        """The Program as FlatBuffers JSON plus its constant, delegate and named blobs."""
        return emit_program(self._programs, self._plans, self._constant_methods)

    @functools.cached_property
    def buffer(self) -> bytes:
        """The ``.pte`` file contents (written by the C++ program writer)."""
        from ember import _C

        e = self.emitted
        return bytes(
            _C.write_program(
                e.json, e.constant_buffers, e.delegate_blobs, named_blobs=e.named_blobs,
                mutable_data=e.mutable_data,
            )
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        data = self.buffer
        with open(path, "wb") as f:
            f.write(data)
