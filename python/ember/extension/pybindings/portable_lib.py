"""ExecuTorch's ``portable_lib`` loading functions over Ember's runtime.

    from ember.extension.pybindings.portable_lib import _load_for_executorch
    module = _load_for_executorch("model.pte")
    outputs = module.forward((torch.randn(1, 3, 32, 32),))  # list of torch tensors

A thin wrapper over ``ember.runtime``: the program is loaded (and verified)
once, each method on first use; inputs and outputs are torch tensors (or
Python scalars). ``enable_etdump`` and ``debug_buffer_size`` are accepted
with their defaults only: Ember writes no ETDump traces.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ember import _C
from ember.runtime import Method, Program, Runtime, Verification

__all__ = [
    "ExecuTorchModule",
    "Verification",
    "_get_operator_names",
    "_load_for_executorch",
    "_load_for_executorch_from_buffer",
]


class ExecuTorchModule:
    """A loaded program; ``forward(inputs)`` / ``run_method(name, inputs)`` run it."""

    def __init__(self, program: Program) -> None:
        self._program = program
        self._methods: dict[str, Method] = {}

    def _method(self, name: str) -> Method:
        if name not in self._methods:
            self._methods[name] = self._program.load_method(name)
        return self._methods[name]

    def run_method(self, method_name: str, inputs: Sequence[Any] = ()) -> list[Any]:
        """Run ``method_name`` on a sequence of inputs; returns its outputs as a list."""
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(
                f"inputs must be a list or tuple of tensors/scalars, got {type(inputs).__name__} "
                "(wrap a single tensor: forward((x,)))"
            )
        return self._method(method_name).execute(list(inputs))

    def forward(self, inputs: Sequence[Any] = ()) -> list[Any]:
        return self.run_method("forward", inputs)

    def __call__(self, inputs: Sequence[Any] = ()) -> list[Any]:
        return self.forward(inputs)

    def method_names(self) -> set[str]:
        return set(self._program.method_names)

    def method_meta(self, method_name: str) -> dict:
        """Inputs, outputs (dtype, sizes, dim order) and planned buffer sizes."""
        return self._program.metadata(method_name)

    def plan_execute(self, method_name: str = "forward") -> None:
        """Loads the method now (its memory plan bound), so the first run does not."""
        self._method(method_name)


def _check_debug_args(enable_etdump: bool, debug_buffer_size: int) -> None:
    if enable_etdump or debug_buffer_size:
        raise NotImplementedError(
            "enable_etdump / debug_buffer_size: Ember's runtime writes no ETDump traces"
        )


def _load_for_executorch(
    path: str | os.PathLike[str],
    enable_etdump: bool = False,
    debug_buffer_size: int = 0,
    program_verification: Verification = Verification.InternalConsistent,
) -> ExecuTorchModule:
    """Load the ``.pte`` file at ``path`` (memory-mapped)."""
    _check_debug_args(enable_etdump, debug_buffer_size)
    return ExecuTorchModule(
        Runtime.get().load_program(os.fspath(path), verification=program_verification)
    )


def _load_for_executorch_from_buffer(
    buffer: bytes | bytearray | memoryview,
    enable_etdump: bool = False,
    debug_buffer_size: int = 0,
    program_verification: Verification = Verification.InternalConsistent,
) -> ExecuTorchModule:
    """Load a ``.pte`` from bytes (copied into aligned memory the module keeps)."""
    _check_debug_args(enable_etdump, debug_buffer_size)
    return ExecuTorchModule(
        Runtime.get().load_program(bytes(buffer), verification=program_verification)
    )


def _get_operator_names() -> list[str]:
    """The operators the runtime has kernels for (``name.overload``)."""
    return list(_C.registered_kernels())
