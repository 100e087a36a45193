"""The Inspector and numerical debugging (#19, item 4): a profile's rows
joined with the program's instructions (FX node, source line, output
types) as a pandas table, from ember-run --profile's Chrome trace or from
ember.devtools.profile; each instruction's outputs captured on the C++
runtime and compared with eager at the same node, finding the op a
deliberately wrong program gets wrong (and nothing on a right one)."""

from __future__ import annotations

import inspect
import io
import json
import subprocess
from pathlib import Path

import pytest
import torch
from ember.backends.xnnpack.partitioner import XnnpackPartitioner
from ember.devtools import (
    Inspector,
    capture_intermediate_outputs,
    compare_with_eager,
    eager_intermediate_outputs,
    profile,
)
from ember.devtools.numeric import _gap, reference_program
from ember.exir import ExecutorchBackendConfig, to_edge
from ember.exir.dialects._ops import ops as exir_ops
from installed import tool
from torch.export import export

pd = pytest.importorskip("pandas")


def _line_of(fn, text: str) -> int:
    """The line number of the first line of ``fn`` that contains ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


class SmallCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        y = torch.sigmoid(y.mean(dim=(2, 3)))
        return self.fc(y)


class WithBatchNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.fc = torch.nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.amax(dim=(2, 3))).softmax(-1)


OPS = ["ember_fused::fused_convolution.out", "aten::mean.out", "aten::sigmoid.out",
       "aten::addmm.out"]


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(0)
    model = SmallCnn().eval()
    x = torch.randn(1, 3, 12, 12)
    edge = to_edge(export(model, (x,)))
    return model, x, edge, edge.to_executorch()


# --- the Inspector's table ---------------------------------------------------


def test_table_without_profile_joins_instructions_with_graph(cnn) -> None:
    _, _, edge, program = cnn
    df = Inspector(program).to_dataframe()
    # to_executorch fuses the convolution and its relu into one op.
    assert list(df["op"]) == OPS
    for column in ("instruction", "kind", "node", "source", "stack", "output_types",
                   "output_shapes", "output_dtypes"):
        assert column in df.columns
    assert "calls" not in df.columns  # no profile, no times
    # Node names are the graph's: every one names a node of the edge program
    # after to_executorch's graph-level passes (the fused convolution's too).
    nodes = {n.name for n in reference_program(edge).graph.nodes}
    assert set(df["node"]) <= nodes
    assert df["node"].iloc[0].startswith("ember_fused_fused_convolution")
    assert df["node"].iloc[1] in {n.name for n in edge.exported_program().graph.nodes}
    # Source lines are the model's.
    here = Path(__file__).name
    relu_line = _line_of(SmallCnn.forward, "torch.relu(self.conv(x))")
    sigmoid_line = _line_of(SmallCnn.forward, "torch.sigmoid")
    assert df["source"].iloc[0] == f"{here}:{relu_line}"
    assert df["source"].iloc[2] == f"{here}:{sigmoid_line}"
    assert f"{here}:{sigmoid_line} in forward" in df["stack"].iloc[2]
    assert df["output_shapes"].iloc[0] == [[1, 8, 10, 10]]
    assert df["output_shapes"].iloc[1] == [[1, 8]]
    assert df["output_dtypes"].iloc[3] == ["float32"]
    # The same from the bytes.
    pd.testing.assert_frame_equal(Inspector(program.buffer).to_dataframe(), df)


def test_table_with_a_python_profile(cnn, tmp_path: Path) -> None:
    _, x, _, program = cnn
    trace = profile(program, [x], iters=4, path=tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text()) == trace
    inspector = Inspector(program, profile=trace)
    assert inspector.runs == 4
    df = inspector.to_dataframe()
    assert list(df["op"]) == OPS
    assert (df["calls"] == 1).all()
    assert (df["total_ms"] >= 0).all() and (df["min_us"] <= df["max_us"]).all()
    assert df["ms_per_run"].sum() * 4 == pytest.approx(df["total_ms"].sum())
    assert df["share"].sum() == pytest.approx(1.0)
    by_op = inspector.aggregate("op")
    assert set(by_op["op"]) == set(df["op"])
    assert by_op["ms_per_run"].is_monotonic_decreasing
    out = io.StringIO()
    inspector.print_data_tabular(out)
    text = out.getvalue()
    assert "profile of 4 run(s)" in text
    for node in df["node"]:
        assert node in text
    assert Path(__file__).name in text


def test_table_with_ember_run_trace(cnn, tmp_path: Path) -> None:
    _, _, _, program = cnn
    pte, trace = tmp_path / "m.pte", tmp_path / "trace.json"
    program.save(pte)
    subprocess.run([tool("ember-run"), str(pte), "--iters", "3", "--warmup", "0",
                    "--profile", str(trace)], check=True, capture_output=True, text=True)
    df = Inspector(pte, profile=trace).to_dataframe()
    assert list(df["op"]) == OPS
    assert (df["calls"] == 1).all()
    assert df["node"].str.len().min() > 0
    assert df["share"].sum() == pytest.approx(1.0)


def test_profile_of_another_program_is_refused(cnn, tmp_path: Path) -> None:
    _, _, _, program = cnn
    other = to_edge(export(torch.nn.Linear(4, 2), (torch.randn(1, 4),))).to_executorch()
    trace = profile(other, [torch.randn(1, 4)], iters=1)
    with pytest.raises(ValueError, match="another program|names instruction"):
        Inspector(program, profile=trace)
    with pytest.raises(ValueError, match="no events"):
        Inspector(program, profile={"traceEvents": []})
    with pytest.raises(ValueError, match="needs a profile"):
        Inspector(program).aggregate()


# --- capturing every instruction's outputs ------------------------------------


def test_captured_outputs_match_eager_nodes_and_final_output(cnn) -> None:
    model, x, edge, program = cnn
    outputs, captured = capture_intermediate_outputs(program, [x])
    assert sorted(captured) == list(range(len(OPS)))
    torch.testing.assert_close(captured[len(OPS) - 1][0], outputs[0])
    torch.testing.assert_close(outputs[0], model(x), rtol=1e-4, atol=1e-5)
    # Each instruction's output against eager at its node.
    _, eager = eager_intermediate_outputs(reference_program(edge), [x])
    df = Inspector(program).to_dataframe()
    for k, node in enumerate(df["node"]):
        torch.testing.assert_close(captured[k][0], eager[node], rtol=1e-4, atol=1e-5)


# --- numerical debugging ----------------------------------------------------


def test_right_program_has_no_divergence(cnn) -> None:
    _, x, edge, program = cnn
    report = compare_with_eager(edge, program, [x])
    assert report.passed, str(report)
    assert report.first_divergence is None
    assert [r.compared for r in report.rows] == [True] * len(OPS)
    assert all(r.rel_error < 1e-4 for r in report.rows)
    assert "no instruction diverges" in str(report)
    df = report.to_dataframe()
    assert list(df.columns[:4]) == ["instruction", "kind", "op", "node"]
    assert df["passed"].all()


def _sigmoid_to_tanh(gm: torch.fx.GraphModule) -> None:
    """A wrong program: the sigmoid node computes tanh (same name, same shape)."""
    for node in gm.graph.nodes:
        if node.target == exir_ops.edge.aten.sigmoid.default:
            node.target = exir_ops.edge.aten.tanh.default
    gm.recompile()


def test_finds_the_op_a_wrong_program_gets_wrong(cnn) -> None:
    _, x, edge, _ = cnn
    wrong = edge.to_executorch(ExecutorchBackendConfig(passes=[_sigmoid_to_tanh]))
    report = compare_with_eager(edge, wrong, [x])
    assert not report.passed
    first = report.first_divergence
    assert first is not None, str(report)
    assert first.op == "aten::tanh.out"  # what the wrong program runs at that node
    assert first.node.startswith("aten_sigmoid")
    line = _line_of(SmallCnn.forward, "torch.sigmoid")
    assert first.source == f"{Path(__file__).name}:{line}"
    assert f":{line} in forward" in first.where
    assert first.rel_error > 0.05
    # Everything before it agrees; the next op sees the wrong input and differs too.
    before = [r for r in report.rows if r.instruction < first.instruction]
    assert before and all(r.passed for r in before)
    assert not report.outputs_passed
    assert f"first divergence: instruction {first.instruction}" in str(report)


def test_inspector_calculates_the_gap(cnn) -> None:
    _, x, edge, _ = cnn
    wrong = edge.to_executorch(ExecutorchBackendConfig(passes=[_sigmoid_to_tanh]))
    report = Inspector(wrong.buffer).calculate_numeric_gap(edge, [x])
    assert report.first_divergence.node.startswith("aten_sigmoid")
    assert Inspector(edge.to_executorch()).calculate_numeric_gap(edge, [x]).passed


def test_folded_batch_norm_compares_with_the_folded_graph() -> None:
    """to_executorch folds batch norm into the convolution: the reference
    graph has the same fold, so the fused node is compared with itself."""
    torch.manual_seed(1)
    model = WithBatchNorm().eval()
    model.bn.running_mean.uniform_(-1, 1)
    model.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 8, 8)
    edge = to_edge(export(model, (x,)))
    program = edge.to_executorch()
    ref = reference_program(edge)
    assert not any("batch_norm" in str(n.target) for n in ref.graph.nodes)
    report = compare_with_eager(edge, program, [x])
    assert report.passed, str(report)
    assert [r.op for r in report.rows if r.compared] == [
        "ember_fused::fused_convolution.out", "aten::amax.out", "aten::addmm.out",
        "aten::_softmax.out"]


def test_delegate_is_compared_as_one_unit() -> None:
    torch.manual_seed(2)
    model = SmallCnn().eval()
    x = torch.randn(1, 3, 12, 12)
    edge = to_edge(export(model, (x,))).to_backend(XnnpackPartitioner())
    program = edge.to_executorch()
    report = compare_with_eager(edge, program, [x])
    delegates = [r for r in report.rows if r.kind == "delegate"]
    assert delegates and all(r.compared for r in delegates), str(report)
    assert all("one unit" in r.note for r in delegates)
    assert report.passed, str(report)


def test_relative_to_the_outputs_magnitude() -> None:
    """An output of tiny values is still checked (an absolute tolerance
    alone would pass anything near zero), and rounding noise on an element
    near zero does not fail a tensor of ordinary magnitude."""
    tiny = torch.full((8,), 1e-7)
    ok, err, scale, _ = _gap(tiny * 1.5, tiny, rtol=1e-3, atol=1e-9)
    assert not ok and err == pytest.approx(5e-8) and scale == pytest.approx(1e-7)
    assert _gap(tiny * (1 + 1e-5), tiny, rtol=1e-3, atol=1e-9)[0]
    ordinary = torch.tensor([1.0, -2.0, 0.0])
    assert _gap(ordinary + torch.tensor([0, 0, 1e-7]), ordinary, rtol=1e-3, atol=1e-9)[0]
    assert not _gap(ordinary + torch.tensor([0, 0.01, 0]), ordinary, rtol=1e-3, atol=1e-9)[0]
    nan = torch.tensor([float("nan"), 1.0])
    assert _gap(nan.clone(), nan, rtol=1e-3, atol=1e-9)[0]
    assert not _gap(torch.tensor([1.0, 1.0]), nan, rtol=1e-3, atol=1e-9)[0]
    assert not _gap(torch.zeros(2, 3), torch.zeros(3, 2), rtol=1e-3, atol=1e-9)[0]
    assert not _gap(torch.tensor([1, 2]), torch.tensor([1, 3]), rtol=1.0, atol=1.0)[0]


class Loop(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, n: torch.Tensor, x: torch.Tensor):
        from torch._higher_order_ops.while_loop import while_loop

        def body(i, x):
            return i + 1, torch.tanh(self.fc(x)) + x * 0.5

        return while_loop(lambda i, x: i < n, body, (torch.zeros((), dtype=torch.int64), x))


def test_loop_runs_instructions_repeatedly() -> None:
    """A loop body runs several times: the capture storage grows to what the
    run needs (each instruction keeps its last run's outputs); the body's
    nodes are compared with eager's last iteration."""
    torch.manual_seed(3)
    model = Loop().eval()
    args = (torch.tensor(3), torch.randn(2, 4))
    edge = to_edge(export(model, args))
    program = edge.to_executorch()
    _, captured = capture_intermediate_outputs(program, list(args))
    table = Inspector(program).to_dataframe()
    tanh = int(table.loc[table["op"] == "aten::tanh.out", "instruction"].iloc[0])
    every = Inspector(program).to_dataframe(include_all=True)
    assert "jump_false" in set(every["kind"]) and "jump_false" not in set(table["kind"])
    x = args[1]
    for _ in range(3):
        last = torch.tanh(model.fc(x))
        x = last + x * 0.5
    torch.testing.assert_close(captured[tanh][0], last.detach(), rtol=1e-4, atol=1e-5)
    report = compare_with_eager(edge, program, list(args))
    assert report.passed and report.outputs_passed, str(report)
    body = [r for r in report.rows if r.node.startswith("aten_tanh")]
    assert body and all(r.compared and r.passed for r in body), str(report)


class Branches(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def yes(x):
            return torch.sigmoid(self.fc(x)) * 2

        def no(x):
            return torch.relu(x) - 1

        return torch.cond(x.sum() > 0, yes, no, (x,)) + 1


def _sigmoid_to_tanh_everywhere(gm: torch.fx.GraphModule) -> None:
    for m in gm.modules():
        if isinstance(m, torch.fx.GraphModule):
            _sigmoid_to_tanh(m)


def test_cond_branches_compared_node_by_node() -> None:
    """The branch taken is compared node by node; the other did not run; a
    wrong op inside the branch is the first divergence."""
    torch.manual_seed(4)
    x = torch.rand(2, 4) + 0.1  # sum > 0: the first branch
    edge = to_edge(export(Branches().eval(), (x,)))
    report = compare_with_eager(edge, edge.to_executorch(), [x])
    assert report.passed and report.outputs_passed, str(report)
    by_op = {r.op: r for r in report.rows}
    assert by_op["aten::sigmoid.out"].compared, str(report)
    assert not by_op["aten::relu.out"].compared
    assert "branch not taken" in by_op["aten::relu.out"].note, str(report)
    wrong = edge.to_executorch(ExecutorchBackendConfig(passes=[_sigmoid_to_tanh_everywhere]))
    report = compare_with_eager(edge, wrong, [x])
    assert report.first_divergence is not None, str(report)
    assert report.first_divergence.op == "aten::tanh.out"
    assert report.first_divergence.node.startswith("aten_sigmoid")


def test_map_is_compared_per_slice() -> None:
    """map is unrolled (one copy of the body per slice) in the program and in
    the reference graph alike: every copy is compared."""
    from functorch.experimental.control_flow import map as control_flow_map

    class Mapped(torch.nn.Module):
        def forward(self, xs, y):
            return control_flow_map(lambda x, y: (x.sin() + y).sum(0, keepdim=True), xs, y)

    xs, y = torch.randn(3, 2, 4), torch.randn(4)
    edge = to_edge(export(Mapped(), (xs, y)))
    report = compare_with_eager(edge, edge.to_executorch(), [xs, y])
    assert report.passed and report.outputs_passed, str(report)
    sins = [r for r in report.rows if r.op == "aten::sin.out"]
    assert len(sins) == 3 and all(r.compared for r in sins), str(report)
