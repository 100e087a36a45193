"""Selective build: ember-oplist writes the op list a set of programs needs;
a runtime built from that list (CMake ember_selective_kernels, here
ember-run-selective-m from tests/oplists/m.txt) runs those programs and
refuses any other at load_method with OperatorMissing, naming the op."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from installed import tool

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests/programs"


_bin = tool


def _ops(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_oplist_of_m_is_the_checked_in_list():
    out = subprocess.run([_bin("ember-oplist"), str(PROGRAMS / "m.pte")], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("# Operators used by: m.pte")
    assert _ops(out) == _ops((ROOT / "tests/oplists/m.txt").read_text()) == [
        "aten::add.out", "aten::addmm.out", "aten::clamp.out"]


def test_oplist_of_mobilenet_v2_is_the_checked_in_list(tmp_path):
    """tests/oplists/mobilenet_v2.txt (the size report's selective runner) is
    what ember-oplist finds in MobileNetV2 as the zoo exports it."""
    import torch
    from torch.export import export

    from ember.exir import to_edge
    from ember.testing.model_zoo import build

    model, inputs = build("mobilenet_v2", "small")
    with torch.no_grad():
        program = to_edge(export(model, inputs)).to_executorch()
    pte = tmp_path / "mobilenet_v2.pte"
    program.save(str(pte))
    out = subprocess.run([_bin("ember-oplist"), str(pte)], capture_output=True, text=True,
                         check=True).stdout
    assert _ops(out) == _ops((ROOT / "tests/oplists/mobilenet_v2.txt").read_text())


def test_oplist_unions_programs_and_writes_a_file(tmp_path):
    dest = tmp_path / "ops.txt"
    subprocess.run([_bin("ember-oplist"), str(PROGRAMS / "m.pte"), str(PROGRAMS / "simple_conv.pte"),
                    "-o", str(dest)], check=True)
    assert _ops(dest.read_text()) == ["aten::add.out", "aten::addmm.out", "aten::clamp.out",
                                      "aten::convolution.out", "aten::relu.out"]


@pytest.mark.parametrize("args,code,message", [
    ([], 2, "usage: ember-oplist"),
    (["--bogus"], 2, "unknown option '--bogus'"),
    (["/nonexistent.pte"], 1, "/nonexistent.pte"),
    (["m.pte", "-o"], 2, "-o needs a file"),
])
def test_oplist_errors(args, code, message):
    args = [str(PROGRAMS / a) if a.endswith(".pte") and not a.startswith("/") else a for a in args]
    r = subprocess.run([_bin("ember-oplist"), *args], capture_output=True, text=True)
    assert r.returncode == code
    assert message in r.stderr


def test_oplist_help():
    r = subprocess.run([_bin("ember-oplist"), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "selective build" in r.stdout


def test_selective_runner_runs_its_program_like_the_full_one(tmp_path):
    full, selective = tmp_path / "full", tmp_path / "selective"
    for exe, out in [("ember-run", full), ("ember-run-selective-m", selective)]:
        out.mkdir()
        subprocess.run([_bin(exe), str(PROGRAMS / "m.pte"), "--save-outputs", str(out)],
                       capture_output=True, text=True, check=True)
    names = sorted(p.name for p in full.glob("*.npy"))
    assert names and names == sorted(p.name for p in selective.glob("*.npy"))
    for name in names:
        np.testing.assert_array_equal(np.load(selective / name), np.load(full / name))


def test_selective_runner_refuses_another_program_naming_the_op():
    r = subprocess.run([_bin("ember-run-selective-m"), str(PROGRAMS / "simple_conv.pte")],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "aten::convolution.out" in r.stderr and "OperatorMissing" in r.stderr, r.stderr


def test_selective_runner_carries_only_its_kernels():
    # A size check, not a timing: the three kernels' runner is a fraction of
    # the full one (which also links XNNPACK's delegate).
    full = Path(_bin("ember-run")).stat().st_size
    selective = Path(_bin("ember-run-selective-m")).stat().st_size
    assert selective < full / 2, (selective, full)
