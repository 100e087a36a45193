"""The checked-in kernel signatures match the registered kernels and PyTorch's
schemas (regenerate with tools/gen_kernel_signatures.py after adding kernels)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ember._C")

ROOT = Path(__file__).resolve().parents[2]


def test_signatures_are_current() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools/gen_kernel_signatures.py"), "--check"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
