"""Profile files and delegate events (#19, item 1): ``.eprof`` files
(schema/profile.fbs) written by ember-run --profile-out and
ember.devtools.profile, read by the Inspector and ember-inspect --plot
--profile, refused when corrupt or of another program; the XNNPACK
delegate's own events under its call in the ember-run table, the Chrome
trace and the Inspector's dataframe."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ember.backends.xnnpack.partitioner import XnnpackPartitioner
from ember.devtools import Inspector, profile, read_profile
from ember.exir import to_edge
from installed import tool
from torch.export import export

pd = pytest.importorskip("pandas")

OPS = ["ember_fused::fused_convolution.out", "aten::mean.out", "aten::addmm.out"]


class Cnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 10, 10)
    return x, to_edge(export(Cnn().eval(), (x,))).to_executorch()


@pytest.fixture(scope="module")
def delegated():
    torch.manual_seed(1)
    x = torch.randn(1, 3, 10, 10)
    edge = to_edge(export(Cnn().eval(), (x,))).to_backend(XnnpackPartitioner())
    return x, edge.to_executorch()


def _run(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=False, capture_output=True, text=True,
                          env=env)


def test_python_profile_file_read_back(cnn, tmp_path: Path) -> None:
    x, program = cnn
    path = tmp_path / "p.eprof"
    trace = profile(program, [x], iters=3, profile_path=path)
    data = read_profile(path, program)
    assert data["method"] == "forward"
    assert data["program_size"] == len(program.buffer)
    assert data["threads"] >= 1 and data["dropped_events"] == 0
    assert [i["op"] for i in data["instructions"]] == OPS
    assert all(i["kind"] == "kernel" for i in data["instructions"])
    assert data["instructions"][0]["source"].startswith(Path(__file__).name)
    assert len(data["runs"]) == 3 and all(len(r) == len(OPS) for r in data["runs"])
    assert all(start <= end for run in data["runs"] for _, _, start, end in run)
    # The same events as the trace profile() returns.
    assert len(trace["traceEvents"]) == 3 * len(OPS)
    # The Inspector reads the file (path or bytes) as it reads the trace.
    df = Inspector(program, profile=path).to_dataframe()
    assert list(df["op"]) == OPS and (df["calls"] == 1).all()
    assert df["share"].sum() == pytest.approx(1.0)
    assert Inspector(program.buffer, profile=path.read_bytes()).runs == 3


def test_ember_run_profile_out(cnn, tmp_path: Path) -> None:
    _, program = cnn
    pte, eprof = tmp_path / "m.pte", tmp_path / "m.eprof"
    program.save(pte)
    out = _run(tool("ember-run"), pte, "--iters", "4", "--warmup", "0", "--threads", "1",
               "--profile-out", eprof)
    assert out.returncode == 0, out.stderr
    assert f"profile written to {eprof}" in out.stdout and "slowest instructions" in out.stdout
    data = read_profile(eprof, pte)
    assert len(data["runs"]) == 4 and data["threads"] == 1
    inspector = Inspector(pte, profile=eprof)
    assert inspector.runs == 4
    assert list(inspector.to_dataframe()["op"]) == OPS


def test_profile_file_of_another_program_is_refused(cnn, delegated, tmp_path: Path) -> None:
    _, program = cnn
    path = tmp_path / "other.eprof"
    trace = profile(delegated[1], [delegated[0]], iters=1, profile_path=path)
    with pytest.raises(ValueError, match="the profile is of another program: it was taken of a"):
        Inspector(program, profile=path)
    with pytest.raises(ValueError, match="another program"):
        read_profile(path, program)
    with pytest.raises(ValueError, match="another program"):
        Inspector(program, profile=trace)  # the trace names its program too


def test_corrupt_profile_files_are_refused(cnn, tmp_path: Path) -> None:
    x, program = cnn
    good = tmp_path / "p.eprof"
    profile(program, [x], iters=1, profile_path=good)
    data = good.read_bytes()
    with pytest.raises(ValueError, match="corrupt"):
        read_profile(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a profile file"):
        read_profile(bytes(program.buffer))
    bad = bytearray(data)
    bad[-1] ^= 0xFF
    bad[len(bad) // 2] ^= 0x40
    try:
        read_profile(bytes(bad))
    except ValueError as e:  # refused with a reason, or read
        assert "profile file" in str(e)


def test_delegate_events_under_their_call(delegated, tmp_path: Path) -> None:
    x, program = delegated
    trace = profile(program, [x], iters=2, profile_path=tmp_path / "d.eprof")
    inner = [e for e in trace["traceEvents"] if e["cat"] == "delegate_event"]
    assert any(e["name"].startswith("xnn_invoke_runtime (") for e in inner)
    calls = {e["args"]["instruction"]: e for e in trace["traceEvents"] if e["cat"] == "delegate"}
    for e in inner:  # inside their call's span
        call = calls[e["args"]["instruction"]]
        assert e["args"]["delegate"] == call["name"]
    for source in (trace, tmp_path / "d.eprof"):
        inspector = Inspector(program, profile=source)
        df = inspector.to_dataframe()
        kinds = list(df["kind"])
        assert "delegate" in kinds and "delegate_event" in kinds
        first = kinds.index("delegate_event")
        assert kinds[first - 1] == "delegate"  # right after its call
        events = df[df["kind"] == "delegate_event"]
        assert set(events["op"]) >= {"xnn_setup_runtime"}
        assert (events["calls"] == 1).all()
        calls_df = df[df["kind"] != "delegate_event"]
        assert calls_df["share"].sum() == pytest.approx(1.0)
        assert "delegate_event" not in set(inspector.aggregate("op")["op"])
        out = io.StringIO()
        inspector.print_data_tabular(out)
        assert "  - xnn_invoke_runtime (" in out.getvalue()


def test_ember_run_table_and_trace_show_delegate_events(cnn, delegated, tmp_path: Path) -> None:
    _, program = delegated
    pte, trace = tmp_path / "d.pte", tmp_path / "d.json"
    program.save(pte)
    out = _run(tool("ember-run"), pte, "--iters", "2", "--warmup", "0", "--profile", trace)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    delegate = next(i for i, line in enumerate(lines) if line.startswith("EmberXnnpackBackend"))
    assert lines[delegate + 1].startswith("  - ")  # indented under the call
    assert any(line.startswith("  - xnn_invoke_runtime (") for line in lines)
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["cat"] == "delegate_event" for e in events)
    df = Inspector(pte, profile=trace).to_dataframe()
    assert "delegate_event" in set(df["kind"])
    # The trace names its program (size and hash): another program refuses it.
    assert json.loads(trace.read_text())["otherData"]["program_size"] == pte.stat().st_size
    with pytest.raises(ValueError, match="the profile is of another program"):
        Inspector(cnn[1], profile=trace)


def test_ember_inspect_plots_a_profile_file(cnn, delegated, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _, program = cnn
    pte, eprof = tmp_path / "m.pte", tmp_path / "m.eprof"
    program.save(pte)
    assert _run(tool("ember-run"), pte, "--iters", "2", "--profile-out", eprof).returncode == 0
    env = dict(os.environ, EMBER_PYTHON=sys.executable)
    out = _run(tool("ember-inspect"), pte, "--plot", tmp_path / "plots", "--profile", eprof,
               env=env)
    assert (tmp_path / "plots" / "profile.png").exists(), out.stderr
    # A profile of another program: refused, saying so.
    other = tmp_path / "other.eprof"
    profile(delegated[1], [delegated[0]], iters=1, profile_path=other)
    out = _run(tool("ember-inspect"), pte, "--plot", tmp_path / "p2", "--profile", other,
               env=env)
    assert out.returncode == 1 and "the profile is of another program" in out.stderr
    assert not (tmp_path / "p2" / "profile.png").exists()
