"""``LoweredBackendModule``: an edge program compiled by a backend.

It is an ``nn.Module`` whose ``forward`` calls
``executorch_call_delegate(self, *args)``, so it can be called from another
module and exported with it; eager (and fake-tensor) calls run
``original_module``. In a ``.pte`` it becomes a ``BackendDelegate`` (id,
processed blob, compile specs) and each call a ``DelegateCall``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from ember.exir.backend.compile_spec_schema import CompileSpec
from ember.exir.delegate import executorch_call_delegate


class LoweredBackendModule(torch.nn.Module):
    def __init__(
        self,
        edge_program: ExportedProgram,
        backend_id: str,
        processed_bytes: bytes,
        compile_specs: list[CompileSpec],
    ) -> None:
        super().__init__()
        self._original_module = edge_program
        self._backend_id = backend_id
        self._processed_bytes = bytes(processed_bytes)
        self._compile_specs = list(compile_specs)

    @property
    def backend_id(self) -> str:
        """The backend that runs this module (``BackendDelegate.id``)."""
        return self._backend_id

    @property
    def processed_bytes(self) -> bytes:
        """The blob the backend's runtime half parses at ``init``."""
        return self._processed_bytes

    @property
    def compile_specs(self) -> list[CompileSpec]:
        return self._compile_specs

    @property
    def original_module(self) -> ExportedProgram:
        """The edge program this module was lowered from."""
        return self._original_module

    def forward(self, *args: Any) -> Any:
        return executorch_call_delegate(self, *args)

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        """Zero tensors shaped like ``original_module``'s user inputs."""
        ep = self._original_module
        if ep.example_inputs is not None:
            args, kwargs = ep.example_inputs
            if not kwargs:
                return tuple(args)
        names = {
            s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT
        }
        vals = [n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder" and n.name in names]
        return tuple(torch.zeros(tuple(int(d) for d in v.shape), dtype=v.dtype) for v in vals)

    def buffer(self) -> bytes:
        """A runnable ``.pte`` of this module alone: its ``forward`` is one
        ``DelegateCall``."""
        from ember.exir import ExecutorchBackendConfig, to_edge

        wrapper = _CallLowered(self)
        aten = torch.export.export(wrapper, self.example_inputs(), strict=False)
        # No source frames: they would name this wrapper, not the model.
        return to_edge(aten).to_executorch(ExecutorchBackendConfig(emit_stacktrace=False)).buffer


class _CallLowered(torch.nn.Module):
    def __init__(self, lowered: LoweredBackendModule) -> None:
        super().__init__()
        self.lowered = lowered

    def forward(self, *args: Any) -> Any:
        return self.lowered(*args)
