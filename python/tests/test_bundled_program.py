"""Bundled programs (#19, item 3): test cases stored with a program (.bpte),
verified by the C++ runtime from Python (ember.devtools.verify) and from
`ember-run --verify`; ember-run, ember-inspect and Runtime.load_program take a
.bpte wherever they take a .pte; every malformed file or mismatched case is
refused with a message naming method, case and value."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch
from ember import _C
from ember.devtools import (
    BundledProgram,
    MethodTestCase,
    MethodTestSuite,
    serialize_from_bundled_program_to_flatbuffer,
    verify,
)
from ember.exir import to_edge
from ember.runtime import EmberError, Runtime
from installed import tool
from torch.export import Dim, export


class TwoOutputs(torch.nn.Module):
    """A float output and an int64 one (compared exactly)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.relu(self.lin(x)) * 2
        return y, y.argmax(-1)


class Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 3.0 - 1.0


class Stats(torch.nn.Module):
    """A 0-dim output, a channels-last input and a bool output."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (x * x).sum(), x > 0


torch.manual_seed(0)
MODEL = TwoOutputs().eval()
INPUTS = [torch.randn(2, 4) for _ in range(3)]


@pytest.fixture(scope="module")
def program():
    return to_edge(export(MODEL, (INPUTS[0],))).to_executorch()


@pytest.fixture(scope="module")
def two_methods():
    return to_edge(
        {
            "forward": export(MODEL, (INPUTS[0],)),
            "scale": export(Scale(), (torch.randn(5),)),
        }
    ).to_executorch()


def _cases(expected=MODEL) -> list[MethodTestCase]:
    return [MethodTestCase(inputs=[x], expected_outputs=expected(x)) for x in INPUTS]


def _bpte(program, cases, method: str = "forward") -> bytes:
    suite = MethodTestSuite(method_name=method, test_cases=cases)
    return serialize_from_bundled_program_to_flatbuffer(BundledProgram(program, [suite]))


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=False, capture_output=True, text=True)


def test_bundled_cases_pass_in_python_and_ember_run(program, tmp_path: Path) -> None:
    data = _bpte(program, _cases())
    assert data[4:8] == b"BP08"
    report = verify(data)
    assert report.passed and len(report.cases) == 3
    for case in report.cases:
        assert case.compared and [o.numel for o in case.outputs] == [6, 2]
        assert case.outputs[0].max_abs_error < 1e-5
        assert case.outputs[1].max_abs_error == 0  # int64, exact
    assert "3 cases: 3 passed, 0 failed" in str(report)
    report.raise_for_failure()

    path = tmp_path / "model.bpte"
    path.write_bytes(data)
    assert verify(path).passed and verify(str(path)).passed
    out = _run(tool("ember-run"), path, "--verify")
    assert out.returncode == 0, out.stderr
    assert "| forward | 2 | pass |" in out.stdout and "3 cases: 3 passed, 0 failed" in out.stdout

    # A .bpte wherever a .pte goes: the program inside runs as the .pte does.
    out = _run(tool("ember-run"), path, "--iters", "1", "--warmup", "0")
    assert out.returncode == 0 and "output 1: int64 [2]" in out.stdout, out.stderr
    out = _run(tool("ember-inspect"), path)
    assert out.returncode == 0 and "test cases: 'forward' 3" in out.stdout, out.stderr
    method = Runtime.get().load_program(data).load_method("forward")
    y, idx = method.execute([INPUTS[1]])
    ref_y, ref_idx = MODEL(INPUTS[1])
    torch.testing.assert_close(y, ref_y)
    assert torch.equal(idx, ref_idx)
    assert _C.bundled_program_data(data) == program.buffer


def test_outputs_outside_the_tolerance_fail_naming_the_worst_element(program, tmp_path) -> None:
    def off(x):
        y, idx = MODEL(x)
        if x is INPUTS[1]:
            y = y.clone()
            y[1, 0] += 0.25
        return y, idx

    data = _bpte(program, _cases(off))
    report = verify(data)
    assert not report.passed and [c.passed for c in report.cases] == [True, False, True]
    bad = report.failures[0]
    out0 = bad.outputs[0]
    assert not out0.passed and out0.worst_element == 3 and out0.shape == [2, 3]
    assert out0.expected == pytest.approx(out0.actual + 0.25, abs=1e-6)
    assert out0.max_abs_error == pytest.approx(0.25, abs=1e-6)
    assert bad.outputs[1].passed
    assert "method 'forward' test case 1: output 0 differs" in bad.message
    assert "element 3 [1, 0]" in bad.message
    with pytest.raises(AssertionError, match=r"element 3 \[1, 0\]"):
        report.raise_for_failure()
    # A tolerance wide enough passes it.
    assert verify(data, atol=0.3).passed

    path = tmp_path / "off.bpte"
    path.write_bytes(data)
    out = _run(tool("ember-run"), path, "--verify")
    assert out.returncode == 1
    assert "| forward | 1 | FAIL |" in out.stdout and "3 cases: 2 passed, 1 failed" in out.stdout
    assert "element 3 [1, 0]" in out.stderr
    assert _run(tool("ember-run"), path, "--verify", "--atol", "0.3").returncode == 0
    out = _run(tool("ember-run"), path, "--verify", "--rtol", "-1")
    assert out.returncode == 2 and "--rtol takes a number >= 0, got '-1'" in out.stderr
    out = _run(tool("ember-run"), path, "--verify", "--atol", "x")
    assert out.returncode == 2 and "--atol takes a number >= 0" in out.stderr


def test_several_methods_and_cases_without_expected_outputs(two_methods) -> None:
    scale_inputs = [torch.randn(5), torch.linspace(-1, 1, 5)]
    suites = [
        MethodTestSuite("forward", _cases()),
        MethodTestSuite(
            "scale",
            [MethodTestCase([x], Scale()(x)) for x in scale_inputs]
            + [MethodTestCase([torch.ones(5)])],
        ),
    ]
    data = serialize_from_bundled_program_to_flatbuffer(BundledProgram(two_methods, suites))
    report = verify(data)
    assert report.passed
    assert [(c.method, c.test_case, c.compared) for c in report.cases] == [
        ("forward", 0, True), ("forward", 1, True), ("forward", 2, True),
        ("scale", 0, True), ("scale", 1, True), ("scale", 2, False),
    ]
    assert [c.method for c in verify(data, method="scale").cases] == ["scale"] * 3
    with pytest.raises(EmberError, match="no test suite for method 'nope'"):
        verify(data, method="nope")


def test_scalar_bool_and_channels_last_values() -> None:
    x = torch.randn(1, 3, 4, 5).to(memory_format=torch.channels_last)
    prog = to_edge(export(Stats(), (x,))).to_executorch()
    xs = [torch.randn(1, 3, 4, 5).to(memory_format=torch.channels_last) for _ in range(2)]
    report = verify(_bpte(prog, [MethodTestCase([v], Stats()(v)) for v in xs]))
    assert report.passed, str(report)
    assert [o.shape for o in report.cases[0].outputs] == [[], [1, 3, 4, 5]]
    flipped = [MethodTestCase([xs[0]], (Stats()(xs[0])[0], ~Stats()(xs[0])[1]))]
    report = verify(_bpte(prog, flipped))
    assert not report.passed and report.cases[0].outputs[0].passed
    assert not report.cases[0].outputs[1].passed


def test_dynamic_inputs_up_to_their_bound() -> None:
    n = Dim("n", min=1, max=8)
    prog = to_edge(export(Scale(), (torch.randn(4),), dynamic_shapes=({0: n},))).to_executorch()
    xs = [torch.randn(k) for k in (1, 5, 8)]
    data = _bpte(prog, [MethodTestCase([x], Scale()(x)) for x in xs])
    assert verify(data).passed
    with pytest.raises(ValueError, match=r"input 0: shape \[9\], the method has at most \[8\]"):
        BundledProgram(prog, [MethodTestSuite("forward", [MethodTestCase([torch.randn(9)])])])


def test_cases_that_do_not_fit_the_program_are_refused_when_bundled(program) -> None:
    x, (y, idx) = INPUTS[0], MODEL(INPUTS[0])

    def bundle(case: MethodTestCase, method: str = "forward"):
        return BundledProgram(program, [MethodTestSuite(method, [case])])

    with pytest.raises(ValueError, match=r"method 'other'.*methods are \['forward'\]"):
        bundle(MethodTestCase([x], (y, idx)), "other")
    with pytest.raises(ValueError, match="test case 0: 2 inputs, the method takes 1"):
        bundle(MethodTestCase([x, x], (y, idx)))
    with pytest.raises(ValueError, match="input 0: dtype float64, the method has float32"):
        bundle(MethodTestCase([x.double()], (y, idx)))
    with pytest.raises(ValueError, match=r"input 0: shape \[4, 2\], the method has \[2, 4\]"):
        bundle(MethodTestCase([x.t()], (y, idx)))
    with pytest.raises(ValueError, match="the method has Tensor there, the test case gives Int"):
        bundle(MethodTestCase([3], (y, idx)))
    with pytest.raises(ValueError, match="1 expected outputs, the method gives 2"):
        bundle(MethodTestCase([x], y))
    with pytest.raises(ValueError, match="output 1: dtype int32, the method has int64"):
        bundle(MethodTestCase([x], (y, idx.int())))
    with pytest.raises(ValueError, match="two test suites for method 'forward'"):
        BundledProgram(program, [MethodTestSuite("forward", []), MethodTestSuite("forward", [])])
    with pytest.raises(ValueError, match="a bundled 'tensor' value has 1 fields"):
        _C.write_bundled_program(program.buffer, [("forward", [([("tensor",)], None)])])


def _tensor(t: torch.Tensor) -> tuple:
    return ("tensor", {torch.float32: 6, torch.int64: 4, torch.int32: 3}[t.dtype], list(t.shape),
            list(range(t.dim())), t.contiguous().view(torch.uint8).numpy().tobytes())


def test_untrusted_files_give_clear_errors(program, tmp_path: Path) -> None:
    """Files written past BundledProgram's checks (another writer, a corrupt
    copy): the C++ reader refuses each naming method, case and value."""
    x, (y, idx) = INPUTS[0], MODEL(INPUTS[0])
    pte = program.buffer

    def write(inputs, outputs):
        return _C.write_bundled_program(pte, [("forward", [(inputs, outputs)])])

    def refused(data: bytes, match: str) -> None:
        with pytest.raises(EmberError, match=match):
            verify(data)

    good = write([_tensor(x)], [_tensor(y), _tensor(idx)])
    assert verify(good).passed
    refused(write([_tensor(x), _tensor(x)], None), "test case 0 has 2 inputs, the method takes 1")
    refused(write([_tensor(x.double().float().int())], None), "test case 0 input 0: .*int32")
    refused(write([_tensor(x.reshape(4, 2))], None), r"test case 0 input 0: .*\[4, 2\]")
    short = list(_tensor(x))
    short[4] = short[4][:10]
    refused(write([tuple(short)], None),
            r"input 0: float32\[2, 4\] needs 32 bytes, the file holds 10")
    refused(write([_tensor(x)], [_tensor(y)]), "expects 1 outputs, the method gives 2")
    refused(write([_tensor(x)], [_tensor(y), _tensor(idx.int())]),
            "output 1: the method gives dtype int64, the test case expects int32")
    refused(write([_tensor(x)], [_tensor(y.t()), _tensor(idx)]),
            r"output 0: the method gives shape \[2, 3\], the test case expects \[3, 2\]")
    refused(write([_tensor(x)], [("int", 3), _tensor(idx)]),
            "output 0: the method gives Tensor, the test case expects Int")
    # Corrupt files: truncated, a bad root offset, not a .bpte at all.
    refused(good[: len(good) // 2], "FlatBuffer failed verification")
    refused(b"\xff\xff\xff\x00" + good[4:], "FlatBuffer failed verification")
    refused(pte, "identifier is not BP08")
    refused(b"", "identifier is not BP08")
    # A corrupt program inside: the program loader's own error.
    broken = bytearray(pte)
    broken[4:8] = b"XX12"
    refused(_C.write_bundled_program(bytes(broken), [("forward", [])]), "load_program")
    path = tmp_path / "cut.bpte"
    path.write_bytes(good[: len(good) // 2])
    out = _run(tool("ember-run"), path, "--verify")
    assert out.returncode == 1 and "FlatBuffer failed verification" in out.stderr
    out = _run(tool("ember-inspect"), path)
    assert out.returncode == 1 and "FlatBuffer failed verification" in out.stderr
    out = _run(tool("ember-run"), tmp_path / "missing.bpte", "--verify")
    assert out.returncode == 1


def test_external_weights_from_a_ptd(tmp_path: Path) -> None:
    """A program whose weights live in a .ptd (external_constants=True):
    verify(data=...) and ember-run --verify --data run its cases; without the
    data, the load fails naming what is missing."""
    from ember.exir import ExecutorchBackendConfig

    edge = to_edge(export(MODEL, (INPUTS[0],)))
    et = edge.to_executorch(ExecutorchBackendConfig(external_constants=True))
    (ptd_name, ptd), = et.data_files.items()
    bundled = BundledProgram(et, [MethodTestSuite(method_name="forward", test_cases=_cases())])
    data = serialize_from_bundled_program_to_flatbuffer(bundled)
    assert verify(bundled).passed  # the manager's one data file
    assert verify(data, data=ptd).passed
    bpte, ptd_path = tmp_path / "ext.bpte", tmp_path / ptd_name
    bpte.write_bytes(data)
    ptd_path.write_bytes(ptd)
    assert verify(bpte, data=ptd_path).passed
    with pytest.raises(EmberError):
        verify(data)  # the weights are missing
    out = _run(tool("ember-run"), bpte, "--verify", "--data", ptd_path)
    assert out.returncode == 0, out.stderr
    assert "3 cases: 3 passed, 0 failed" in out.stdout
    out = _run(tool("ember-run"), bpte, "--verify")
    assert out.returncode == 1 and "--data" in out.stderr, out.stderr
