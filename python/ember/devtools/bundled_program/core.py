"""``BundledProgram``: a program and its test suites, checked against the
program's methods (counts, kinds, dtypes, shapes) before anything is written."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ember.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
from ember.exir.emit.enums import SCALAR_TYPES


def _program_bytes(program: Any) -> bytes:
    if hasattr(program, "buffer"):  # ExecutorchProgramManager
        return bytes(program.buffer)
    if isinstance(program, bytes | bytearray | memoryview):
        return bytes(program)
    if isinstance(program, str | os.PathLike):
        with open(program, "rb") as f:
            return f.read()
    raise TypeError(
        "executorch_program must be an ExecutorchProgramManager, .pte bytes or a path, "
        f"got {type(program).__name__}"
    )


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_value(value: Any, meta: dict, where: str) -> None:
    """``value`` against the method's description of that input or output."""
    kind = meta["kind"]
    if isinstance(value, torch.Tensor):
        if kind != "Tensor":
            raise ValueError(f"{where}: the method has {kind} there, the test case gives a tensor")
        if _dtype_name(value.dtype) != meta["dtype"]:
            raise ValueError(
                f"{where}: dtype {_dtype_name(value.dtype)}, the method has {meta['dtype']}"
            )
        shape, want = list(value.shape), list(meta["sizes"])
        bounded = meta["dynamic"]
        fits = len(shape) == len(want) and all(
            s <= w if bounded else s == w for s, w in zip(shape, want)
        )
        if not fits:
            what = "at most " if bounded else ""
            raise ValueError(f"{where}: shape {shape}, the method has {what}{want}")
        return
    scalar = "Bool" if isinstance(value, bool) else "Int" if isinstance(value, int) else "Double"
    if kind != scalar:
        raise ValueError(f"{where}: the method has {kind} there, the test case gives {scalar}")


def _serialize_value(value: Any, dim_order: Sequence[int] | None, where: str) -> tuple:
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        if t.dtype not in SCALAR_TYPES:
            raise TypeError(f"{where}: dtype {t.dtype} cannot be stored")
        order = list(dim_order) if dim_order is not None and len(dim_order) == t.dim() else list(
            range(t.dim())
        )
        laid_out = t.permute(order).contiguous()
        # Flattened first: a 0-dim tensor cannot be viewed as bytes.
        data = laid_out.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return ("tensor", SCALAR_TYPES[t.dtype][1], list(t.shape), order, data)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("double", value)
    raise TypeError(
        f"{where}: a {type(value).__name__} cannot be stored (tensor, int, float, bool)"
    )


class BundledProgram:
    """A program with test cases per method (ExecuTorch's
    ``BundledProgram(executorch_program, method_test_suites)``).

    ``executorch_program``: an ``ExecutorchProgramManager``, or a ``.pte`` as
    bytes or a path. Each case is checked against its method here: the method
    exists, input and expected-output counts, kinds, dtypes and shapes (a
    dynamic dimension up to its bound); a ``ValueError`` names method, case
    and value otherwise."""

    def __init__(
        self,
        executorch_program: Any,
        method_test_suites: Sequence[MethodTestSuite],
        pte_file: str | os.PathLike | None = None,
    ) -> None:
        from ember import _C

        source = pte_file if executorch_program is None else executorch_program
        self.program = _program_bytes(source)
        # The weights a manager's program keeps outside itself (.ptd), for verify.
        self.data_files: dict[str, bytes] = dict(getattr(source, "data_files", None) or {})
        self.method_test_suites = list(method_test_suites)
        loaded = _C.load_program(self.program)
        methods = list(loaded.method_names)
        self._metas: dict[str, dict] = {}
        seen: set[str] = set()
        for suite in self.method_test_suites:
            name = suite.method_name
            if name not in methods:
                raise ValueError(
                    f"test suite for method '{name}': the program's methods are {methods}"
                )
            if name in seen:
                raise ValueError(f"two test suites for method '{name}'")
            seen.add(name)
            meta = self._metas[name] = loaded.method_meta(name)
            for c, case in enumerate(suite.test_cases):
                if not isinstance(case, MethodTestCase):
                    raise TypeError(f"method '{name}' test case {c}: not a MethodTestCase")
                if len(case.inputs) != len(meta["inputs"]):
                    raise ValueError(
                        f"method '{name}' test case {c}: {len(case.inputs)} inputs, "
                        f"the method takes {len(meta['inputs'])}"
                    )
                for i, x in enumerate(case.inputs):
                    _check_value(x, meta["inputs"][i], f"method '{name}' test case {c} input {i}")
                if case.expected_outputs is None:
                    continue
                if len(case.expected_outputs) != len(meta["outputs"]):
                    raise ValueError(
                        f"method '{name}' test case {c}: {len(case.expected_outputs)} expected "
                        f"outputs, the method gives {len(meta['outputs'])}"
                    )
                for i, y in enumerate(case.expected_outputs):
                    where = f"method '{name}' test case {c} output {i}"
                    _check_value(y, meta["outputs"][i], where)

    def serialized_suites(self) -> list[tuple]:
        """The suites as the C++ writer takes them."""
        suites = []
        for suite in self.method_test_suites:
            meta = self._metas[suite.method_name]
            cases = []
            for c, case in enumerate(suite.test_cases):
                at = f"method '{suite.method_name}' test case {c}"
                inputs = [
                    _serialize_value(x, meta["inputs"][i].get("dim_order"), f"{at} input {i}")
                    for i, x in enumerate(case.inputs)
                ]
                outputs = None
                if case.expected_outputs is not None:
                    outputs = [
                        _serialize_value(
                            y, meta["outputs"][i].get("dim_order"), f"{at} output {i}"
                        )
                        for i, y in enumerate(case.expected_outputs)
                    ]
                cases.append((inputs, outputs))
            suites.append((suite.method_name, cases))
        return suites
