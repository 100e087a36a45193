"""Pictures of a program (#19, item 5): the memory plan (matplotlib; from the
.pte alone, and the same plan the exporter made), the profile as a chart
(from ember-run --profile's Chrome trace), the graph as SVG (Graphviz), and
`ember-inspect --plot DIR` writing them all; what happens without dot or
without a Python that can draw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ember.backends.xnnpack.partitioner import XnnpackPartitioner
from ember.devtools import (
    BundledProgram,
    MethodTestCase,
    MethodTestSuite,
    graph_dot,
    memory_plan_data,
    plot_graph,
    plot_memory_plan,
    plot_profile,
    profile_summary,
    serialize_from_bundled_program_to_flatbuffer,
)
from ember.exir import ExecutorchBackendConfig, to_edge
from installed import tool
from torch.export import export

PNG = b"\x89PNG\r\n\x1a\n"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


class Residual(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.c1(x))
        y = y + torch.relu(self.c2(y))
        return self.fc(y.mean(dim=(2, 3))).softmax(-1)


class Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count.add_(1)
        return x * self.count


X = torch.randn(1, 3, 8, 8)


@pytest.fixture(scope="module")
def program():
    # Unfused: the tests draw and profile the convolution, relu and add as such.
    config = ExecutorchBackendConfig(fuse_conv_activation=False)
    return to_edge(export(Residual().eval(), (X,))).to_executorch(config)


def _run(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=False, capture_output=True, text=True,
                          env=env)


def test_memory_plan_from_the_file_is_the_exporters_plan(program, tmp_path: Path) -> None:
    data = memory_plan_data(program)
    plan = program.memory_plan("forward")
    n = data["num_instructions"]
    assert data["buffers"] == plan.buffer_sizes
    assert data["lower_bound"] == plan.lower_bound
    by_label = {t["label"].split(" (output")[0]: t for t in data["tensors"]}
    assert len(data["tensors"]) == len(plan.tensors)
    for t in plan.tensors:
        if t.name == "x":  # the input: set before instruction 0, live to the end
            view = by_label["input 0"]
            assert (view["first"], view["last"], view["kind"]) == (-1, n, "input")
        else:
            view = by_label[t.name]
            assert view["first"] == t.first and view["last"] in (t.last, n)
        assert (view["offset"], view["nbytes"]) == (t.offset, t.size)
    assert [t["kind"] for t in data["tensors"]].count("output") == 1
    # The same data from bytes, a path and a bundled program holding it.
    pte = tmp_path / "r.pte"
    program.save(pte)
    bundled = BundledProgram(program, [MethodTestSuite("forward", [MethodTestCase([X])])])
    bpte = serialize_from_bundled_program_to_flatbuffer(bundled)
    for source in (program.buffer, pte, str(pte), bpte, bundled):
        assert memory_plan_data(source) == data
    # ember-inspect's lower bound is the same number.
    out = _run(tool("ember-inspect"), pte)
    assert f"lower bound {plan.lower_bound} (max live)" in out.stdout

    for name in ("plan.png", "plan.svg"):
        path = plot_memory_plan(program, tmp_path / name)
        assert path.stat().st_size > 1000
    assert (tmp_path / "plan.png").read_bytes()[:8] == PNG
    svg = (tmp_path / "plan.svg").read_text()
    assert "<svg" in svg and "lower bound" in svg
    with pytest.raises(KeyError, match="no method 'nope'; the program's methods: forward"):
        memory_plan_data(program, "nope")
    with pytest.raises(TypeError, match="expected an ExecutorchProgramManager"):
        memory_plan_data(42)


def test_mutable_state_is_drawn_as_such(tmp_path: Path) -> None:
    prog = to_edge(export(Counter(), (torch.randn(4),))).to_executorch()
    data = memory_plan_data(prog)
    mutable = [t for t in data["tensors"] if t["kind"] == "mutable"]
    assert len(mutable) == 1 and mutable[0]["buffer"] == 2
    assert (mutable[0]["first"], mutable[0]["last"]) == (-1, data["num_instructions"])
    assert plot_memory_plan(prog, tmp_path / "m.png").read_bytes()[:8] == PNG


@needs_dot
def test_graph_as_svg(program, tmp_path: Path) -> None:
    dot = graph_dot(program)
    # The residual add reads both relus; constants (weights) are not drawn.
    lines = dot.splitlines()
    add = next(line.split()[0] for line in lines if "aten::add.out" in line)
    relus = [line.split()[0] for line in lines if "aten::relu.out" in line]
    assert len(relus) == 2
    for relu in relus:
        assert f"  {relu} -> {add};" in lines
    assert "  input0 -> i0;" in lines and sum("-> output0;" in line for line in lines) == 1
    assert "aten_add_tensor" in dot and "test_devtools_plots.py:" in dot  # node and source line
    svg = plot_graph(program, tmp_path / "g.svg").read_text()
    assert "<svg" in svg and "aten::convolution.out" in svg
    assert plot_graph(program, tmp_path / "g.png").read_bytes()[:8] == PNG


@needs_dot
def test_graph_of_delegates_and_jumps() -> None:
    lowered = to_edge(export(Residual().eval(), (X,))).to_backend(XnnpackPartitioner())
    assert "0: delegate EmberXnnpackBackend" in graph_dot(lowered.to_executorch())

    class Branch(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))

    dot = graph_dot(to_edge(export(Branch(), (torch.randn(3),))).to_executorch())
    assert "jump_false" in dot and 'style=dashed, label="if false"' in dot


def test_profile_chart_from_ember_run_trace(program, tmp_path: Path) -> None:
    pte, trace = tmp_path / "r.pte", tmp_path / "trace.json"
    program.save(pte)
    out = _run(tool("ember-run"), pte, "--iters", "3", "--warmup", "0", "--profile", trace)
    assert out.returncode == 0, out.stderr
    rows = profile_summary(trace)
    names = {r[0] for r in rows}
    assert {"aten::convolution.out", "aten::relu.out", "aten::add.out"} <= names
    assert {r[0]: r[2] for r in rows}["aten::convolution.out"] == 2  # calls per run
    assert all(r[1] > 0 for r in rows)
    assert plot_profile(trace, tmp_path / "p.png").read_bytes()[:8] == PNG
    assert plot_profile(json.loads(trace.read_text()), tmp_path / "p.svg").stat().st_size > 1000
    with pytest.raises(ValueError, match="holds no events"):
        profile_summary({"traceEvents": []})


def test_ember_inspect_plot_writes_every_picture(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    pte = root / "tests" / "programs" / "encode_decode.pte"
    trace = tmp_path / "trace.json"
    assert _run(tool("ember-run"), pte, "--method", "encode", "--profile", trace).returncode == 0
    out_dir = tmp_path / "plots"
    env = dict(os.environ, EMBER_PYTHON=sys.executable)
    out = _run(tool("ember-inspect"), pte, "--plot", out_dir, "--profile", trace, env=env)
    assert out.returncode == 0, out.stderr
    written = sorted(p.name for p in out_dir.iterdir())
    expected = [f"{m}.{kind}" for m in ("decode", "encode")
                for kind in ("graph.dot", "memory_plan.json", "memory_plan.png")]
    assert set(expected) <= set(written) and "profile.png" in written
    if shutil.which("dot"):
        assert "encode.graph.svg" in written and "decode.graph.svg" in written
    assert (out_dir / "encode.memory_plan.png").read_bytes()[:8] == PNG
    assert f"wrote {out_dir}/encode.memory_plan.png" in out.stdout
    data = json.loads((out_dir / "decode.memory_plan.json").read_text())
    assert data["method"] == "decode" and data["tensors"]

    # Without dot: the DOT file, and a message saying what to install.
    no_dot = tmp_path / "no_dot"
    env_no_dot = dict(env, PATH=str(tmp_path / "empty-bin"))
    out = _run(tool("ember-inspect"), pte, "--plot", no_dot, env=env_no_dot)
    assert out.returncode == 1
    assert "dot was not found (Debian: apt-get install graphviz)" in out.stderr
    assert (no_dot / "encode.graph.dot").exists() and (no_dot / "encode.memory_plan.png").exists()
    # Without a Python that can draw: the data, and a message saying why.
    out = _run(tool("ember-inspect"), pte, "--plot", tmp_path / "no_py",
               env=dict(env, EMBER_PYTHON="/bin/false"))
    assert out.returncode == 1 and "drawing with /bin/false failed" in out.stderr
    assert (tmp_path / "no_py" / "encode.memory_plan.json").exists()
    # --profile needs --plot.
    out = _run(tool("ember-inspect"), pte, "--profile", trace)
    assert out.returncode == 2 and "--profile goes with --plot DIR" in out.stderr
