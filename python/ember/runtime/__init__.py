"""Run `.pte` programs with Ember's C++ runtime from Python.

    from ember.runtime import Runtime
    program = Runtime.get().load_program("model.pte")      # or bytes
    method = program.load_method("forward")
    outputs = method.execute([torch.randn(1, 3, 32, 32)])  # list of tensors

Errors from the runtime (a malformed file, a wrong input dtype or shape, a
missing kernel) raise `EmberError` (a RuntimeError) with the runtime's message.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from typing import Any, BinaryIO

import numpy as np
import torch

from ember import _C

EmberError = _C.EmberError

__all__ = ["EmberError", "Method", "Program", "Runtime", "Verification"]


class Verification(enum.Enum):
    """How much ``load_program`` checks (ExecuTorch's names).

    ``InternalConsistent`` (the default): every rule of the format
    (``docs/pte-format-notes.md``), Ember's full verification.
    ``Minimal``: only the FlatBuffer's own verifier, for trusted files where
    load time matters."""

    Minimal = "minimal"
    InternalConsistent = "full"


def _verification_level(verification: Verification | str) -> str:
    if isinstance(verification, Verification):
        return verification.value
    if verification in ("full", "minimal"):
        return verification
    raise ValueError(
        f"verification must be a Verification (Minimal, InternalConsistent), got {verification!r}"
    )


def _in_dim_order(t: torch.Tensor, dim_order: Sequence[int]) -> torch.Tensor:
    """``t`` laid out in ``dim_order`` (outermost dim first), copied if it is not."""
    order = list(dim_order)
    if sorted(order) != list(range(t.dim())):
        return t
    # The strides the order gives (sizes 0 and 1 count as 1, as torch's), so
    # empty and size-1 dims cannot make the layout ambiguous.
    strides, step = [0] * t.dim(), 1
    for d in reversed(order):
        strides[d] = step
        step *= max(t.shape[d], 1)
    if list(t.stride()) == strides:
        return t
    return torch.empty_strided(t.shape, strides, dtype=t.dtype).copy_(t)


def _to_runtime(value: Any, dim_order: Sequence[int] | None = None) -> Any:
    if isinstance(value, torch.Tensor):
        # Passed as it is (DLPack, no copy): every dtype, bfloat16 included.
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        if dim_order is not None:
            # Pass it in the program's layout (a column-major LU from
            # torch.linalg.lu_factor, channels-last; an empty tensor whose
            # strides say another order).
            return _in_dim_order(t, dim_order)
        if not (t.is_contiguous() or t.is_contiguous(memory_format=torch.channels_last)):
            t = t.contiguous()
        return t
    if isinstance(value, np.ndarray | bool | int | float):
        return value
    raise TypeError(f"unsupported input of type {type(value).__name__}")


class Method:
    """A loaded method of a program; `execute` runs it."""

    def __init__(self, method: Any) -> None:
        self._method = method
        self._dim_orders: list[Any] | None = None
        self._written: list[int] | None = None

    @property
    def name(self) -> str:
        return self._method.name

    @property
    def prepared_bytes(self) -> int:
        """Bytes the kernels' prepare steps took at load (packed constant weights)."""
        return self._method.prepared_bytes

    @property
    def dropped_constant_bytes(self) -> int:
        """Bytes of constants only prepare read (packed copies replace them), which a
        program loaded from a path (mmapped) drops from memory."""
        return self._method.dropped_constant_bytes

    @property
    def num_mutable_buffers(self) -> int:
        """Mutable buffers (a KV cache, a counter) whose contents carry over from one
        ``execute`` to the next; each loaded method has its own."""
        return self._method.num_mutable_buffers

    @property
    def mutable_buffer_bytes(self) -> int:
        return self._method.mutable_buffer_bytes

    def reset(self) -> None:
        """Puts the mutable buffers back to the initial values the program holds."""
        self._method.reset_mutable_buffers()

    def _input_dim_orders(self) -> list[Any]:
        if self._dim_orders is None:
            self._dim_orders = [i.get("dim_order") for i in self._method.method_meta()["inputs"]]
        return self._dim_orders

    def _converted(self, inputs: Sequence[Any]) -> list[Any]:
        orders = self._input_dim_orders()
        return [_to_runtime(x, orders[i] if i < len(orders) else None)
                for i, x in enumerate(inputs)]

    def _write_back(self, inputs: Sequence[Any]) -> None:
        if self._written is None:
            self._written = list(self._method.written_inputs)
        for i in self._written:
            if i < len(inputs) and isinstance(inputs[i], torch.Tensor):
                with torch.no_grad():
                    inputs[i].copy_(self._method.get_input(i, torch_outputs=True))

    def execute(self, inputs: Sequence[Any]) -> list[Any]:
        """Runs the method on tensors (or scalars); returns a list of tensors.
        An input the method mutates in place (``x.add_(1)`` in ``forward``) is
        updated in the caller's tensor too, as eager would."""
        outputs = self._method.execute(self._converted(inputs), torch_outputs=True)
        self._write_back(inputs)
        return outputs

    def execute_capturing(
        self, inputs: Sequence[Any], capacity_bytes: int = 0
    ) -> tuple[list[Any], list[tuple[int, int, Any]]]:
        """Runs once and captures every kernel and delegate instruction's
        outputs right after it ran (numerical debugging, ``docs/devtools.md``):
        ``(outputs, [(instruction, output index, tensor or scalar), ...])`` in
        the order they ran. Storage is sized for one pass over the
        instructions; a run that repeats some (a loop) raises ``ValueError``
        naming the ``capacity_bytes`` it needs."""
        outputs, captured = self._method.execute_capturing(
            self._converted(inputs), torch_outputs=True, capacity_bytes=capacity_bytes)
        self._write_back(inputs)
        return outputs, [tuple(c) for c in captured]

    def execute_profiled(
        self,
        inputs: Sequence[Any],
        iters: int = 1,
        profile_path: str = "",
        program_fingerprint: tuple[int, int] | None = None,
    ) -> tuple[list[Any], list[tuple[int, int, int, str | None]]]:
        """Runs ``iters`` times (inputs set before each run) timing every kernel
        and delegate instruction: ``(outputs, [(instruction, start_ns, end_ns,
        name), ...])``, ``name`` None for the instruction itself and the
        event's name for one its delegate logged inside it (its inner
        operators); ``ember.devtools.profile`` makes a trace of it. With
        ``profile_path``, the profile file (``.eprof``) is written there too,
        naming the program by ``program_fingerprint`` (``(size, hash)``,
        ``ember._C.program_fingerprint``)."""
        converted = self._converted(inputs)
        outputs, events = self._method.execute_profiled(
            converted, iters, torch_outputs=True, profile_path=profile_path,
            program_fingerprint=program_fingerprint)
        self._write_back(inputs)
        return outputs, [tuple(e) for e in events]

    def __call__(self, *inputs: Any) -> list[Any]:
        return self.execute(list(inputs))

    def metadata(self) -> dict:
        """Inputs, outputs (dtype, sizes, dim order) and planned buffer sizes."""
        return self._method.method_meta()


class Program:
    """A loaded and verified `.pte` program."""

    def __init__(self, program: Any) -> None:
        self._program = program

    @property
    def method_names(self) -> list[str]:
        return list(self._program.method_names)

    def load_method(self, name: str = "forward") -> Method:
        return Method(self._program.load_method(name))

    def metadata(self, name: str = "forward") -> dict:
        return self._program.method_meta(name)


class Runtime:
    """Entry point of the runtime: `Runtime.get().load_program(...)`."""

    _instance: Runtime | None = None

    @classmethod
    def get(cls) -> Runtime:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def load_program(
        self,
        source: str | os.PathLike | bytes | bytearray | BinaryIO,
        verification: Verification | str = Verification.InternalConsistent,
        data: str | os.PathLike | bytes | bytearray | None = None,
    ) -> Program:
        """A program from a path, bytes or a binary file object, checked as
        ``verification`` says (``Verification.InternalConsistent``: every rule
        of the format; ``Verification.Minimal``: the FlatBuffer verifier only).
        ``data``: the ``.ptd`` file of the tensors the program keeps outside
        itself (``ExecutorchBackendConfig(external_constants=True)``), as a path
        when the program is a path, as bytes when it is bytes."""
        level = _verification_level(verification)

        def norm(x: Any) -> Any:
            if hasattr(x, "read"):
                x = x.read()
            if isinstance(x, bytearray | memoryview):
                return bytes(x)
            return os.fspath(x) if isinstance(x, os.PathLike) else x

        return Program(_C.load_program(norm(source), level, norm(data)))

    @property
    def registered_kernels(self) -> list[str]:
        return list(_C.registered_kernels())
