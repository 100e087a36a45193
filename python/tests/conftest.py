"""Test the source tree's ``ember``, even when an older copy is installed.

The compiled extension ``ember._C`` is taken from the source tree when it
was built there, otherwise from an installed ``ember`` package.
"""

import site
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SOURCE))
for name in [m for m in sys.modules if m == "ember" or m.startswith("ember.")]:
    del sys.modules[name]

import ember  # noqa: E402

if not list((SOURCE / "ember").glob("_C*")):
    for directory in [*site.getsitepackages(), site.getusersitepackages()]:
        installed = Path(directory) / "ember"
        if list(installed.glob("_C*")):
            ember.__path__.append(str(installed))
            break
