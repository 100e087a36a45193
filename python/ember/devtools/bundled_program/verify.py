"""Run a ``.bpte``'s test cases on the C++ runtime and compare the outputs."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass
class OutputResult:
    index: int
    passed: bool
    numel: int
    max_abs_error: float
    max_rel_error: float
    worst_element: int  # flat (row-major) index of the element furthest outside the tolerance
    actual: float
    expected: float
    shape: list[int] = field(default_factory=list)


@dataclass
class CaseResult:
    method: str
    test_case: int
    compared: bool  # False: the case holds no expected outputs (it was only run)
    passed: bool
    outputs: list[OutputResult]
    message: str  # what failed: output, worst element, values ("" when passed)


@dataclass
class VerificationReport:
    """Every case's result; ``str()`` is the table ``ember-run --verify`` prints."""

    cases: list[CaseResult]
    rtol: float
    atol: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    @property
    def failures(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.passed]

    def raise_for_failure(self) -> None:
        """Raises ``AssertionError`` naming each failed case's worst element."""
        if not self.passed:
            raise AssertionError("\n".join(c.message for c in self.failures))

    def __str__(self) -> str:
        lines = [
            f"rtol {self.rtol:g}, atol {self.atol:g}",
            "| method | case | result | max abs error | max rel error |",
            "|---|---:|---|---:|---:|",
        ]
        for c in self.cases:
            result = "pass" if c.passed else "FAIL"
            if not c.compared:
                lines.append(f"| {c.method} | {c.test_case} | ran (nothing to compare) | | |")
                continue
            abs_err = max((o.max_abs_error for o in c.outputs), default=0.0)
            rel_err = max((o.max_rel_error for o in c.outputs), default=0.0)
            lines.append(
                f"| {c.method} | {c.test_case} | {result} | {abs_err:.3g} | {rel_err:.3g} |"
            )
        failed = len(self.failures)
        lines.append(f"{len(self.cases)} cases: {len(self.cases) - failed} passed, {failed} failed")
        return "\n".join(lines)


def verify(
    bpte: Any,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    method: str | None = None,
    data: Any = None,
) -> VerificationReport:
    """Runs every test case of a bundled program (``.bpte`` bytes, a path, or a
    ``BundledProgram``) with the C++ runtime and compares each output:
    ``|actual - expected| <= atol + rtol * |expected|`` per element (NaN only
    matches NaN). Returns the report (``report.passed``,
    ``report.raise_for_failure()``); a malformed file or a case that does not
    fit its method (counts, dtypes, shapes) raises ``EmberError`` naming the
    method, case and value.

    ``data``: the ``.ptd`` file (a path or its bytes) of the weights a program
    exported with ``ExecutorchBackendConfig(external_constants=True)`` keeps
    outside itself (``ember-run --verify --data``); a ``BundledProgram`` made
    from a program manager with one data file uses that file when ``data``
    is not given."""
    from ember import _C
    from ember.devtools.bundled_program.core import BundledProgram
    from ember.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol and atol must be >= 0, got {rtol} and {atol}")
    if isinstance(bpte, BundledProgram):
        if data is None and len(bpte.data_files) == 1:
            data = next(iter(bpte.data_files.values()))
        bpte = serialize_from_bundled_program_to_flatbuffer(bpte)
    elif isinstance(bpte, bytearray | memoryview):
        bpte = bytes(bpte)
    elif isinstance(bpte, os.PathLike):
        bpte = os.fspath(bpte)
    if isinstance(data, bytearray | memoryview):
        data = bytes(data)
    elif isinstance(data, os.PathLike):
        data = os.fspath(data)
    cases = _C.run_bundled_program(bpte, rtol, atol, method or "", data)
    results = [
        CaseResult(
            method=c["method"], test_case=c["test_case"], compared=c["compared"],
            passed=c["passed"], message=c["message"],
            outputs=[OutputResult(**o) for o in c["outputs"]],
        )
        for c in cases
    ]
    return VerificationReport(results, rtol, atol)
