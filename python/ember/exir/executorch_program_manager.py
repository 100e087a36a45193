"""``ExecutorchProgramManager``: out-variant programs, memory plans, the .pte bytes."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, BinaryIO, TextIO

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
        return emit_program(self._programs, self._plans, self._constant_methods,
                            self.config.external_constants, self.config.emit_stacktrace)

    @functools.cached_property
    def buffer(self) -> bytes:
        """The ``.pte`` file contents (written by the C++ program writer)."""
        from ember import _C

        e = self.emitted
        return bytes(
            _C.write_program(
                e.json,
                e.constant_buffers,
                e.delegate_blobs,
                named_blobs=e.named_blobs,
                mutable_data=e.mutable_data,
                **self.config.writer_options(),
            )
        )

    @property
    def config_methods(self) -> list[str]:
        """Methods returning constants (``constant_methods``)."""
        return list(self._constant_methods)

    @functools.cached_property
    def data_files(self) -> dict[str, bytes]:
        """The named-data files (``<tag>.ptd`` -> bytes) of the constants kept
        outside the program (``ExecutorchBackendConfig(external_constants=...)``)."""
        from ember import _C

        e = self.emitted
        return {
            f"{tag}.ptd": bytes(_C.write_named_data(e.external.file_entries(tag)))
            for tag in e.external.files
        }

    def write_tensor_data_to_file(self, outdir: str | os.PathLike[str]) -> list[str]:
        """Writes each named-data file into ``outdir``; returns their paths.
        Unless ``data_files`` was already made, the C++ writer streams each file
        from the constants' memory (no copy of the weights)."""
        os.makedirs(outdir, exist_ok=True)
        paths = []
        if "data_files" in self.__dict__:  # made already (functools.cached_property)
            for name, data in self.data_files.items():
                path = os.path.join(os.fspath(outdir), name)
                with open(path, "wb") as f:
                    f.write(data)
                paths.append(path)
            return paths
        from ember import _C

        e = self.emitted
        for tag in e.external.files:
            path = os.path.join(os.fspath(outdir), f"{tag}.ptd")
            _C.write_named_data_file(path, e.external.file_entries(tag))
            paths.append(path)
        return paths

    def write_to_file(self, open_file: BinaryIO) -> None:
        """Write the ``.pte`` bytes to a file opened for binary writing."""
        open_file.write(self.buffer)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the ``.pte`` to ``path``. Unless ``buffer`` was already made,
        the C++ writer streams it to the file: the constants are not copied
        into a second whole-file buffer (a 1B-parameter float32 model would
        otherwise need its weights three more times in memory)."""
        if "buffer" in self.__dict__:  # made already (functools.cached_property)
            with open(path, "wb") as f:
                self.write_to_file(f)
            return
        from ember import _C

        e = self.emitted
        _C.write_program_file(
            os.fspath(path),
            e.json,
            e.constant_buffers,
            e.delegate_blobs,
            named_blobs=e.named_blobs,
            mutable_data=e.mutable_data,
            **self.config.writer_options(),
        )

    def dump_executorch_program(self, verbose: bool = False, out: TextIO | None = None) -> None:
        """Print the emitted program: its tables as JSON, or with ``verbose``
        each method's instructions, operators and arguments, readable."""
        from ember.exir.print_program import print_program

        print_program(self.emitted.program, out or sys.stdout, verbose)

    @property
    def executorch_program(self) -> dict[str, Any]:
        """The emitted Program (FlatBuffers JSON as a dict, before the writer
        adds segments and the constant segment)."""
        return self.emitted.program
