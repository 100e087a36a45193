"""The tutorial's section "delegating to a backend", end to end: lowering in
Python, the demo backend's blob in the .pte, the C++ demo backend running
it (through the bindings and through ember-run), and the error paths."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from installed import tool
import torch
from models import Foo
from torch.export import ExportedProgram, export

from ember.exir import EdgeProgramManager, ExecutorchBackendConfig, to_edge
from ember.exir.backend.backend_api import LoweredBackendModule, to_backend
from ember.exir.backend.compile_spec_schema import CompileSpec
from ember.exir.backend.test.backend_with_compiler_demo import (  # noqa: F401
    BackendWithCompilerDemo,
)
from ember.exir.backend.test.op_partitioner_demo import AddMulPartitionerDemo
from ember.exir.delegate import executorch_call_delegate

_C = pytest.importorskip("ember._C")
from ember.runtime import EmberError, Runtime  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6


class LowerableModule(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x)


class NotLowerableModule(torch.nn.Module):
    def __init__(self, bias: torch.Tensor) -> None:
        super().__init__()
        self.bias = bias

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.add(torch.add(a, b), self.bias)


class ComposedModule(torch.nn.Module):
    def __init__(self, lowered_module: LoweredBackendModule) -> None:
        super().__init__()
        self.non_lowerable = NotLowerableModule(torch.ones(1) * 0.3)
        self.lowerable = lowered_module

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = self.lowerable(x)
        b = self.lowerable(a)
        ret = self.non_lowerable(a, b)
        return a, b, ret


_bin = tool


def _ember_run(pte: Path, out_dir: Path, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    out_dir.mkdir(exist_ok=True)
    cmd = [_bin("ember-run"), str(pte), "--save-outputs", str(out_dir)]
    for name, t in inputs.items():
        np.save(out_dir / f"{name}.npy", t.numpy())
        cmd += ["--input", str(out_dir / f"{name}.npy")]
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    outs = []
    while (out_dir / f"output_{len(outs)}.npy").exists():
        outs.append(torch.from_numpy(np.load(out_dir / f"output_{len(outs)}.npy")))
    return outs


def _run(pte: bytes, inputs: list[torch.Tensor], method: str = "forward") -> list[torch.Tensor]:
    return Runtime.get().load_program(pte).load_method(method).execute(inputs)


def _assert_close(got: list[torch.Tensor], expected: tuple[torch.Tensor, ...]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=RTOL, atol=ATOL)


def _delegate_calls(program: dict, plan: int = 0) -> list[dict]:
    chain = program["execution_plan"][plan]["chains"][0]
    instructions = chain["instructions"]
    return [i["instr_args"] for i in instructions if i["instr_args_type"] == "DelegateCall"]


def _lowered_sin() -> LoweredBackendModule:
    example_args = (torch.ones(1),)
    aten_dialect: ExportedProgram = export(LowerableModule(), example_args)
    edge_program: EdgeProgramManager = to_edge(aten_dialect)
    to_be_lowered_module = edge_program.exported_program()
    return to_backend("BackendWithCompilerDemo", to_be_lowered_module, [])


# ---- 1. lowering a whole module -----------------------------------------


def test_lower_whole_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lowered_module = _lowered_sin()
    print(lowered_module)
    print(lowered_module.backend_id)
    print(lowered_module.processed_bytes)
    print(lowered_module.original_module)
    printed = capsys.readouterr().out
    assert printed.startswith("LoweredBackendModule()\nBackendWithCompilerDemo\nb'EDM1")
    assert "aten_sin_default" in printed and "x: USER_INPUT" in printed
    assert lowered_module.compile_specs == []
    assert isinstance(lowered_module.original_module, ExportedProgram)

    # Eager calls run the original program.
    x = torch.tensor([0.25])
    torch.testing.assert_close(lowered_module(x), torch.sin(x))

    save_path = tmp_path / "delegate.pte"
    with open(save_path, "wb") as f:
        f.write(lowered_module.buffer())
    x = torch.tensor([1.3])
    _assert_close(_run(save_path.read_bytes(), [x]), (torch.sin(x),))
    _assert_close(_ember_run(save_path, tmp_path / "out", {"x": x}), (torch.sin(x),))


def test_buffer_is_one_delegate_call() -> None:
    lowered = _lowered_sin()
    # Without source frames (the wrapper's would differ from lowered.buffer()'s).
    program = to_edge(export(_Wrap(lowered), (torch.ones(1),))).to_executorch(
        ExecutorchBackendConfig(emit_stacktrace=False)
    )
    plan = program.emitted.program["execution_plan"][0]
    instructions = plan["chains"][0]["instructions"]
    assert [i["instr_args_type"] for i in instructions] == ["DelegateCall"]
    assert plan["delegates"] == [
        {
            "id": "BackendWithCompilerDemo",
            "processed": {"location": "INLINE", "index": 0},
            "compile_specs": [],
        }
    ]
    assert program.emitted.delegate_blobs == [lowered.processed_bytes]
    assert program.buffer == lowered.buffer()


class _Wrap(torch.nn.Module):
    def __init__(self, lowered: LoweredBackendModule) -> None:
        super().__init__()
        self.lowered = lowered

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lowered(x)


def test_demo_blob_layout() -> None:
    """sin on f32[1]: the EDM1 layout of backends/demo/README.md, field by field."""
    blob = _lowered_sin().processed_bytes
    magic, version, slots, inputs, outputs, instrs = struct.unpack_from("<4sIIIII", blob)
    assert (magic, version, slots, inputs, outputs, instrs) == (b"EDM1", 1, 2, 1, 1, 1)
    pos = 24
    for _ in range(2):
        assert struct.unpack_from("<BBHi", blob, pos) == (6, 1, 0, 1)
        pos += 8
    assert struct.unpack_from("<II", blob, pos) == (0, 1)
    pos += 8
    assert struct.unpack_from("<B3xIIIf", blob, pos) == (1, 0, 0xFFFFFFFF, 1, 1.0)
    assert len(blob) == pos + 20


def test_demo_blob_alpha() -> None:
    class SubAlpha(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.sub(a * b, b, alpha=2.5)

    args = (torch.randn(2, 3), torch.randn(3))
    lowered = to_backend(
        "BackendWithCompilerDemo", to_edge(export(SubAlpha(), args)).exported_program(), []
    )
    blob = lowered.processed_bytes
    assert blob.endswith(struct.pack("<B3xIIIf", 3, 2, 1, 3, 2.5))
    _assert_close(_run(lowered.buffer(), list(args)), (SubAlpha()(*args),))


def test_demo_preprocess_refuses_other_ops_and_dtypes() -> None:
    class Cos(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cos(x)

    ep = to_edge(export(Cos(), (torch.ones(2),))).exported_program()
    with pytest.raises(RuntimeError, match=r"cannot lower operator aten\.cos\.default"):
        to_backend("BackendWithCompilerDemo", ep, [])
    doubles = (torch.ones(2, dtype=torch.float64),)
    ep = to_edge(export(LowerableModule(), doubles)).exported_program()
    with pytest.raises(RuntimeError, match=r"float32 only: x .*torch\.float64"):
        to_backend("BackendWithCompilerDemo", ep, [])


def test_unknown_backend_id_at_to_backend() -> None:
    ep = to_edge(export(LowerableModule(), (torch.ones(1),))).exported_program()
    with pytest.raises(NotImplementedError, match="NoSuchBackend"):
        to_backend("NoSuchBackend", ep, [])


# ---- 2. a lowered module inside another module ------------------------------


def test_composed_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lowered_module = _lowered_sin()
    example_args = (torch.ones(1),)
    aten_dialect: ExportedProgram = export(ComposedModule(lowered_module), example_args)
    edge_program: EdgeProgramManager = to_edge(aten_dialect)
    exported_program = edge_program.exported_program()
    print(exported_program)
    print(exported_program.graph_module.lowered_module_0.backend_id)
    print(exported_program.graph_module.lowered_module_0.processed_bytes)
    print(exported_program.graph_module.lowered_module_0.original_module)
    printed = capsys.readouterr().out
    assert "torch.ops.higher_order.executorch_call_delegate(lowered_module_0, x)" in printed
    assert "lowered_module_1 = self.lowered_module_0" in printed
    assert "c_non_lowerable_bias: CONSTANT_TENSOR" in printed
    gm = exported_program.graph_module
    assert gm.lowered_module_0.processed_bytes == lowered_module.processed_bytes
    calls = [n for n in gm.graph.nodes if n.target is executorch_call_delegate]
    assert len(calls) == 2

    program = edge_program.to_executorch()
    emitted = program.emitted.program
    # The module called twice is one delegate entry and one blob.
    assert len(emitted["execution_plan"][0]["delegates"]) == 1
    assert len(program.emitted.delegate_blobs) == 1
    calls = _delegate_calls(emitted)
    assert [c["delegate_index"] for c in calls] == [0, 0]
    assert len(calls[0]["args"]) == 2 and calls[1]["args"][0] == calls[0]["args"][1]

    x = torch.tensor([0.7])
    expected = ComposedModule(lowered_module)(x)
    _assert_close(_run(program.buffer, [x]), expected)
    program.save(tmp_path / "composed.pte")
    _assert_close(_ember_run(tmp_path / "composed.pte", tmp_path / "out", {"x": x}), expected)


# ---- 3. partitioning ----------------------------------------------------------


def _foo_args() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return (torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2))


def test_foo_to_backend_with_partitioner(capsys: pytest.CaptureFixture[str]) -> None:
    example_args = _foo_args()
    aten_dialect: ExportedProgram = export(Foo(), example_args)
    edge_program: EdgeProgramManager = to_edge(aten_dialect)
    exported_program = edge_program.exported_program()
    before = str(exported_program)

    delegated_program = to_backend(exported_program, AddMulPartitionerDemo())
    print(delegated_program)
    print(delegated_program.graph_module.lowered_module_0.original_module)
    print(delegated_program.graph_module.lowered_module_1.original_module)
    printed = capsys.readouterr().out
    assert str(exported_program) == before, "to_backend must not change its input"
    gm = delegated_program.graph_module
    calls = [n for n in gm.graph.nodes if n.target is executorch_call_delegate]
    assert [c.args[0].target for c in calls] == ["lowered_module_1", "lowered_module_0"]
    assert [a.name for a in calls[0].args[1:]] == ["a", "x", "b"]
    assert [a.name for a in calls[1].args[1:]] == ["aten_sub_tensor", "x", "b"]
    ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert sum("aten.sub.Tensor" in o for o in ops) == 1
    assert not any("mm" in o or "add" in o for o in ops)
    assert "executorch_call_delegate(lowered_module_1, a, x, b)" in printed
    assert "executorch_call_delegate(lowered_module_0, aten_sub_tensor, x, b)" in printed
    for name in ("lowered_module_0", "lowered_module_1"):
        sub = getattr(gm, name).original_module
        targets = [str(n.target) for n in sub.graph.nodes if n.op == "call_function"]
        assert len(targets) == 2 and "mm" in targets[0] and "add" in targets[1]
        assert getattr(gm, name).compile_specs == [CompileSpec("max_value", bytes([4]))]

    # The delegated edge program still runs eagerly.
    torch.testing.assert_close(delegated_program.module()(*example_args), Foo()(*example_args))


def test_foo_edge_program_manager_to_backend(tmp_path: Path) -> None:
    example_args = _foo_args()
    edge = to_edge(export(Foo(), example_args))
    delegated = edge.to_backend(AddMulPartitionerDemo())
    assert isinstance(delegated, EdgeProgramManager) and delegated is not edge
    assert "executorch_call_delegate" not in str(edge.exported_program())
    text = str(delegated.exported_program())
    assert "lowered_module_0" in text and "lowered_module_1" in text

    # Edge passes still run over a delegated program (the call keeps its module).
    delegated = delegated.transform([])
    program = delegated.to_executorch()
    emitted = program.emitted.program
    plan = emitted["execution_plan"][0]
    assert [op["name"] for op in plan["operators"]] == ["aten::sub"]
    assert len(_delegate_calls(emitted)) == 2
    assert [d["id"] for d in plan["delegates"]] == ["BackendWithCompilerDemo"] * 2
    # Both subgraphs are mm + add on f32[2, 2]: two delegates, one copy of the blob.
    assert [d["processed"]["index"] for d in plan["delegates"]] == [0, 0]
    assert len(program.emitted.delegate_blobs) == 1
    assert plan["delegates"][0]["compile_specs"] == [{"key": "max_value", "value": [4]}]
    for call in _delegate_calls(emitted):
        assert len(call["args"]) == 4  # three inputs, one output

    inputs = _foo_args()
    expected = (Foo()(*inputs),)
    _assert_close(_run(program.buffer, list(inputs)), expected)
    program.save(tmp_path / "foo.pte")
    got = _ember_run(tmp_path / "foo.pte", tmp_path / "out", dict(zip("axb", inputs, strict=True)))
    _assert_close(got, expected)


class _MmSinAdd(torch.nn.Module):
    """mm and add are tagged, sin between them is not: one subgraph of
    {mm, add} would feed sin and read it back."""

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        y = torch.mm(a, x)
        return y + torch.sin(y)


def test_partition_that_would_be_a_cycle_is_split() -> None:
    args = (torch.randn(3, 4), torch.randn(4, 2))
    edge = to_edge(export(_MmSinAdd(), args))
    delegated = edge.to_backend(AddMulPartitionerDemo())
    gm = delegated.exported_program().graph_module
    calls = [n for n in gm.graph.nodes if n.target is executorch_call_delegate]
    assert len(calls) == 2
    inner = [
        [str(n.target) for n in getattr(gm, c.args[0].target).original_module.graph.nodes
         if n.op == "call_function"]
        for c in calls
    ]
    assert len(inner[0]) == 1 and "mm" in inner[0][0]
    assert len(inner[1]) == 1 and "add" in inner[1][0]
    gm.graph.lint()
    _assert_close(_run(delegated.to_executorch().buffer, list(args)), (_MmSinAdd()(*args),))


def test_fuse_keeps_independent_nodes_together() -> None:
    """Tagged nodes with no path between them through untagged ones fuse."""
    from ember.exir.backend.fuse import fuse_tagged_nodes

    class TwoBranches(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            p = a + b
            q = torch.mm(a, b)
            return torch.sin(p) + q

    args = (torch.randn(3, 3), torch.randn(3, 3))
    ep = to_edge(export(TwoBranches(), args)).exported_program()
    ep = AddMulPartitionerDemo().partition(ep).tagged_exported_program
    groups = fuse_tagged_nodes(ep.graph_module)
    # {add, mm} fuse; the last add reads sin(add) so it needs its own group.
    assert [len(g.nodes) for g in groups] == [2, 1]
    delegated = to_backend(to_edge(export(TwoBranches(), args)).exported_program(),
                           AddMulPartitionerDemo())
    program = to_edge(export(TwoBranches(), args)).to_backend(AddMulPartitionerDemo())
    assert str(program.exported_program()) == str(delegated)
    _assert_close(_run(program.to_executorch().buffer, list(args)), (TwoBranches()(*args),))


def test_partition_reads_parameters_as_delegate_inputs() -> None:
    class Affine(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, 3))
            self.register_buffer("b", torch.randn(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sin(torch.mm(x, self.w) + self.b)

    model = Affine()
    args = (torch.randn(2, 4),)
    delegated = to_edge(export(model, args)).to_backend(AddMulPartitionerDemo())
    gm = delegated.exported_program().graph_module
    (call,) = [n for n in gm.graph.nodes if n.target is executorch_call_delegate]
    assert [a.name for a in call.args[1:]] == ["x", "p_w", "b_b"]
    sub = gm.lowered_module_0.original_module
    assert all(s.kind.name == "USER_INPUT" for s in sub.graph_signature.input_specs)
    with torch.no_grad():
        expected = (model(*args),)
    _assert_close(_run(delegated.to_executorch().buffer, list(args)), expected)


def test_several_methods_use_delegates() -> None:
    class MmAdd(torch.nn.Module):
        def forward(self, a: torch.Tensor, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.sin(torch.mm(a, x) + b)

    foo_args = _foo_args()
    mm_args = (torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2))
    edge = to_edge({"forward": export(Foo(), foo_args), "mm_add": export(MmAdd(), mm_args)})
    program = edge.to_backend(AddMulPartitionerDemo()).to_executorch()
    emitted = program.emitted.program
    assert len(_delegate_calls(emitted, 0)) == 2 and len(_delegate_calls(emitted, 1)) == 1
    # mm + add on f32[2, 2] inputs is the same blob in both methods: stored once.
    assert len(program.emitted.delegate_blobs) == 1
    assert len(emitted["execution_plan"][1]["delegates"]) == 1
    loaded = Runtime.get().load_program(program.buffer)
    _assert_close(loaded.load_method("forward").execute(list(foo_args)), (Foo()(*foo_args),))
    _assert_close(loaded.load_method("mm_add").execute(list(mm_args)), (MmAdd()(*mm_args),))


def test_partition_tag_without_spec_is_an_error() -> None:
    from ember.exir.backend.partitioner import DELEGATION_TAG, Partitioner, PartitionResult

    class Forgetful(Partitioner):
        def partition(self, exported_program: ExportedProgram) -> PartitionResult:
            for n in exported_program.graph.nodes:
                if n.op == "call_function":
                    n.meta[DELEGATION_TAG] = "lost"
            return PartitionResult(exported_program, {})

    ep = to_edge(export(LowerableModule(), (torch.ones(1),))).exported_program()
    with pytest.raises(ValueError, match="'lost'.*no DelegationSpec"):
        to_backend(ep, Forgetful())


# ---- errors at load -----------------------------------------------------------


def _foo_program():
    return to_edge(export(Foo(), _foo_args())).to_backend(AddMulPartitionerDemo()).to_executorch()


def test_unregistered_backend_fails_to_load() -> None:
    e = _foo_program().emitted
    program = json.loads(e.json)
    for plan in program["execution_plan"]:
        for d in plan["delegates"]:
            d["id"] = "NoSuchBackend"
    pte = bytes(_C.write_program(json.dumps(program), e.constant_buffers, e.delegate_blobs))
    loaded = Runtime.get().load_program(pte)
    with pytest.raises(EmberError, match="NoSuchBackend"):
        loaded.load_method("forward")


def test_corrupt_blob_fails_with_the_backends_message() -> None:
    e = _foo_program().emitted
    blobs = [b"XXXX" + b[4:] for b in e.delegate_blobs]
    pte = bytes(_C.write_program(e.json, e.constant_buffers, blobs))
    with pytest.raises(EmberError, match="'BackendWithCompilerDemo' failed to init: .*'EDM1'"):
        Runtime.get().load_program(pte).load_method("forward")
    truncated = [b[:-3] for b in e.delegate_blobs]
    pte = bytes(_C.write_program(e.json, e.constant_buffers, truncated))
    with pytest.raises(EmberError, match="truncated"):
        Runtime.get().load_program(pte).load_method("forward")


def test_blob_in_segment_or_inline_runs() -> None:
    e = _foo_program().emitted
    inputs = _foo_args()
    for inline in (0, 1 << 20):
        pte = bytes(
            _C.write_program(e.json, e.constant_buffers, e.delegate_blobs,
                             max_inline_delegate_bytes=inline)
        )
        _assert_close(_run(pte, list(inputs)), (Foo()(*inputs),))
