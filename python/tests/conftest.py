"""Tests run against the installed ``ember`` (``make test`` installs the tree
first, so the package and its compiled ``ember._C`` match the sources)."""

import sys
from pathlib import Path

try:
    import ember._C  # noqa: F401
except ImportError:  # Not installed: the pure-Python parts still import from the tree.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
