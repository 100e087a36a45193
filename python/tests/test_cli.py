"""The command-line tools as a user meets them: --help, bad arguments, a
wrong method name, ember-run --profile (table and Chrome trace) and inputs
set before every run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch
from installed import tool

from ember.exir import ExecutorchBackendConfig, to_edge


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x)).mean(dim=(2, 3))


@pytest.fixture(scope="module")
def pte(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "small.pte"
    # Unfused, so the profile has the convolution and the relu as rows of their own.
    config = ExecutorchBackendConfig(fuse_conv_activation=False)
    to_edge(torch.export.export(Small().eval(), (torch.randn(1, 3, 8, 8),))).to_executorch(
        config).save(path)
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*args], capture_output=True, text=True)


@pytest.mark.parametrize("name", ["ember-run", "ember-inspect"])
def test_help_exits_zero_and_explains_every_option(name: str) -> None:
    out = _run(tool(name), "--help")
    assert out.returncode == 0 and out.stderr == ""
    assert "usage:" in out.stdout and "--data" in out.stdout


def test_bad_arguments_are_usage_errors(pte: Path) -> None:
    out = _run(tool("ember-run"), str(pte), "--iters", "abc")
    assert out.returncode == 2 and "--iters takes a whole number >= 1, got 'abc'" in out.stderr
    out = _run(tool("ember-run"), str(pte), "--warmup")
    assert out.returncode == 2 and "--warmup" in out.stderr
    out = _run(tool("ember-run"), str(pte), "--no-such-flag")
    assert out.returncode == 2 and "unknown option" in out.stderr
    out = _run(tool("ember-inspect"), str(pte), "--bogus")
    assert out.returncode == 2 and "unexpected argument '--bogus'" in out.stderr


def test_wrong_method_lists_the_methods(pte: Path) -> None:
    out = _run(tool("ember-run"), str(pte), "--method", "decode")
    assert out.returncode == 1
    assert "no method 'decode'; its methods: forward" in out.stderr


def test_profile_table_and_chrome_trace(pte: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    out = _run(tool("ember-run"), str(pte), "--iters", "4", "--profile", str(trace))
    assert out.returncode == 0, out.stderr
    table = out.stdout[out.stdout.index("profile over 4 runs"):]
    for op in ("aten::convolution.out", "aten::relu.out", "aten::mean.out"):
        assert op in table
    assert "[1, 8, 8, 8]" in table  # the convolution's output shape
    events = json.loads(trace.read_text())["traceEvents"]
    instructions = {e["args"]["instruction"] for e in events}
    assert len(events) == 4 * len(instructions)
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    starts = [e["ts"] for e in events]
    assert starts == sorted(starts)


class Lookup(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)  # the line a bad id fails on
        return h.sum()


def test_runtime_errors_and_profiles_name_the_model_source_line(tmp_path: Path) -> None:
    import inspect

    from ember.exir import ExecutorchBackendConfig
    from ember.runtime import EmberError, Runtime

    line = inspect.getsourcelines(Lookup.forward)[1] + 1
    edge = to_edge(torch.export.export(Lookup(), (torch.tensor([1, 2]),)))
    et = edge.to_executorch()
    method = Runtime.get().load_program(et.buffer).load_method()
    with pytest.raises(EmberError) as error:
        method.execute([torch.tensor([1, 42])])
    message = str(error.value)
    assert "index 42 is out of bounds" in message
    assert f"test_cli.py:{line} in forward: h = self.emb(ids)" in message
    assert "(node aten_embedding_default)" in message
    pte = tmp_path / "lookup.pte"
    et.save(pte)
    out = _run(tool("ember-run"), str(pte), "--profile", "--iters", "2")
    assert f"test_cli.py:{line} (aten_embedding_default)" in out.stdout
    # Opt-out: no stack traces, a smaller file, the error without the source.
    bare = edge.to_executorch(ExecutorchBackendConfig(emit_stacktrace=False))
    assert len(bare.buffer) < len(et.buffer)
    method = Runtime.get().load_program(bare.buffer).load_method()
    with pytest.raises(EmberError, match="out of bounds") as error:
        method.execute([torch.tensor([1, 42])])
    assert "model source" not in str(error.value)
