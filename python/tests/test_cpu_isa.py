"""EMBER_ISA caps the kernels' ISA dispatch (docs/determinism.md), read once
per process: each case runs in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_C = pytest.importorskip("ember._C")

LEVELS = ["baseline", "avx2", "avx512", "amx"]


def dispatch_under(value: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("EMBER_ISA", None)
    if value is not None:
        env["EMBER_ISA"] = value
    code = "import ember._C as c; print(c.cpu_isa(), c.host_isa())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True)


def test_unset_is_the_host():
    cpu, host = dispatch_under(None).stdout.split()
    assert cpu == host and host in LEVELS


@pytest.mark.parametrize("cap", LEVELS)
def test_a_cap_never_raises_the_level(cap):
    cpu, host = dispatch_under(cap).stdout.split()
    assert cpu == LEVELS[min(LEVELS.index(cap), LEVELS.index(host))]


def test_an_unknown_value_is_reported_and_ignored():
    run = dispatch_under("sse9")
    cpu, host = run.stdout.split()
    assert cpu == host
    assert "EMBER_ISA=sse9 is not baseline, avx2, avx512 or amx" in run.stderr
