"""The test cases a bundled program holds (ExecuTorch's names)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def _as_list(values: Any) -> list[Any]:
    if isinstance(values, torch.Tensor | int | float | bool):
        return [values]
    return list(values)


class MethodTestCase:
    """One run of a method: its ``inputs`` and the ``expected_outputs`` it
    must give (None: the case is only run, nothing is compared)."""

    def __init__(self, inputs: Sequence[Any], expected_outputs: Any = None) -> None:
        self.inputs = _as_list(inputs)
        self.expected_outputs = None if expected_outputs is None else _as_list(expected_outputs)

    def __repr__(self) -> str:
        n = "None" if self.expected_outputs is None else len(self.expected_outputs)
        return f"MethodTestCase({len(self.inputs)} inputs, expected outputs: {n})"


class MethodTestSuite:
    """The test cases of one method."""

    def __init__(self, method_name: str, test_cases: Sequence[MethodTestCase]) -> None:
        self.method_name = method_name
        self.test_cases = list(test_cases)

    def __repr__(self) -> str:
        return f"MethodTestSuite({self.method_name!r}, {len(self.test_cases)} test cases)"
