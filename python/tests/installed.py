"""Where the package's command-line tools are installed (beside the venv's
Python, or on PATH); tests that need one skip when it is missing."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found
