"""The emitter: ExecutionPlan JSON per schema/program.fbs, constants, the writer."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, ExecutorchProgramManager, to_edge
from ember.exir.emit.constants import tensor_bytes
from ember.runtime import Runtime
from models import Basic, Decode, Encode, Foo, M, Mixed, SimpleConv
from torch.export import export

SCHEMA = Path(__file__).resolve().parents[2] / "schema" / "program.fbs"

MODELS = {
    "basic": (Basic(), (torch.randn(3, 3), torch.randn(3, 3))),
    "foo": (Foo(), tuple(torch.randn(2, 2) for _ in range(3))),
    "conv": (SimpleConv(), (torch.randn(1, 3, 8, 8),)),
    "m": (M(), (torch.randn(3, 4),)),
    "mixed": (Mixed(), (torch.randn(4, 4), torch.arange(4))),
}


def _program(name: str) -> ExecutorchProgramManager:
    model, args = MODELS[name]
    return to_edge(export(model, args)).to_executorch()


def _plan(program: ExecutorchProgramManager, index: int = 0) -> dict[str, Any]:
    return program.emitted.program["execution_plan"][index]


def test_basic_add_plan() -> None:
    plan = _plan(_program("basic"))
    assert plan["name"] == "forward"
    values = plan["values"]
    x = values[0]["val"]
    assert values[0]["val_type"] == "Tensor"
    assert x["scalar_type"] == "FLOAT32" and x["sizes"] == [3, 3] and x["dim_order"] == [0, 1]
    assert x["data_buffer_idx"] == 0 and x["shape_dynamism"] == "STATIC"
    assert x["allocation_info"]["memory_id"] == 1
    assert values[3] == {"val_type": "Int", "val": {"int_val": 1}}  # alpha
    assert plan["inputs"] == [0, 1] and plan["outputs"] == [2]
    assert plan["operators"] == [{"name": "aten::add", "overload": "out"}]
    (chain,) = plan["chains"]
    assert chain["inputs"] == [0, 1] and chain["outputs"] == [2]
    assert chain["instructions"] == [
        {"instr_args_type": "KernelCall", "instr_args": {"op_index": 0, "args": [0, 1, 3, 2, 2]}}
    ]
    offsets = sorted(values[i]["val"]["allocation_info"]["memory_offset_low"] for i in range(3))
    assert offsets == [0, 48, 96]
    assert plan["non_const_buffer_sizes"] == [0, 144]
    assert set(plan["container_meta_type"]) == {"encoded_inp_str", "encoded_out_str"}
    assert "segments" not in _program("basic").emitted.program


def _schema_args(op_name: str, overload: str) -> list[torch._C.Argument]:
    namespace, name = op_name.split("::")
    return list(getattr(getattr(getattr(torch.ops, namespace), name), overload)._schema.arguments)


@pytest.mark.parametrize("name", list(MODELS))
def test_kernel_calls_follow_schemas(name: str) -> None:
    plan = _plan(_program(name))
    values = plan["values"]
    for instruction in plan["chains"][0]["instructions"]:
        call = instruction["instr_args"]
        operator = plan["operators"][call["op_index"]]
        schema_args = _schema_args(operator["name"], operator["overload"])
        assert len(call["args"]) == len(schema_args) + 1, operator
        assert all(0 <= i < len(values) for i in call["args"])
        for arg, index in zip(schema_args, call["args"], strict=False):
            kind = values[index]["val_type"]
            if isinstance(arg.type, torch.TensorType):
                assert kind == "Tensor", (operator, arg.name, kind)
                if arg.kwarg_only:  # an out tensor: planned memory
                    assert "allocation_info" in values[index]["val"]
        assert (
            call["args"][-1] == call["args"][-2]
            or values[call["args"][-1]]["val_type"] == "TensorList"
        )


def test_multi_output_and_lists() -> None:
    # The pool's unread indices stay: a multi-output op with a list return.
    model, args = MODELS["mixed"]
    plan = _plan(to_edge(export(model, args)).to_executorch(
        ExecutorchBackendConfig(max_pool_without_indices=False)))
    values = plan["values"]
    by_name = {(o["name"], o["overload"]): i for i, o in enumerate(plan["operators"])}
    calls = {
        c["instr_args"]["op_index"]: c["instr_args"]["args"]
        for c in plan["chains"][0]["instructions"]
    }
    pool = calls[by_name[("aten::max_pool2d_with_indices", "out")]]
    ret = values[pool[-1]]
    assert ret == {"val_type": "TensorList", "val": {"items": [pool[-3], pool[-2]]}}
    kernel = values[pool[1]]
    assert kernel["val_type"] == "IntList"
    assert [values[i]["val"]["int_val"] for i in kernel["val"]["items"]] == [2, 2]
    split = calls[by_name[("aten::split_with_sizes_copy", "out")]]
    assert values[split[-1]]["val_type"] == "TensorList" and split[-1] == split[-2]
    assert values[calls[by_name[("aten::div", "out_mode")]][2]] == {
        "val_type": "String",
        "val": {"string_val": "floor"},
    }
    sum_args = calls[by_name[("aten::sum", "IntList_out")]]
    assert values[sum_args[3]] == {"val_type": "Int", "val": {"int_val": 7}}  # dtype=float64
    clamp = calls[by_name[("aten::clamp", "out")]]
    assert values[clamp[1]]["val"]["double_val"] == "__ember_nonfinite_-inf__"
    assert '"double_val":-inf' in _program("mixed").emitted.json
    assert values[clamp[2]] == {"val_type": "Null", "val": {}}
    assert len(plan["outputs"]) == 10


def test_constants_are_blobs() -> None:
    model, args = MODELS["m"]
    # Unfolded, so the blobs are the parameters themselves.
    config = ExecutorchBackendConfig(constant_folding=False)
    program = to_edge(export(model, args)).to_executorch(config)
    emitted = program.emitted
    constants = [
        v["val"]
        for v in _plan(program)["values"]
        if v["val_type"] == "Tensor" and v["val"]["data_buffer_idx"]
    ]
    assert len(constants) == 3
    assert all("allocation_info" not in c for c in constants)
    blobs = {bytes(tensor_bytes(p.detach())) for p in model.parameters()}
    assert {bytes(b) for b in emitted.constant_buffers} == blobs
    for c in constants:
        blob = emitted.constant_buffers[c["data_buffer_idx"] - 1]
        numel = 1
        for s in c["sizes"]:
            numel *= s
        assert len(blob) == numel * 4


def test_two_methods() -> None:
    edge = to_edge(
        {
            "encode": export(Encode(), (torch.randn(1, 10),)),
            "decode": export(Decode(), (torch.randn(1, 5),)),
        }
    )
    program = edge.to_executorch()
    plans = program.emitted.program["execution_plan"]
    assert [p["name"] for p in plans] == ["encode", "decode"]
    ops = {(o["name"], o["overload"]) for o in plans[0]["operators"]}
    assert ops == {("aten::randn", "out"), ("aten::permute_copy", "out"), ("aten::mm", "out")}


@pytest.mark.skipif(shutil.which("flatc") is None, reason="flatc not installed")
@pytest.mark.parametrize("name", list(MODELS))
def test_json_validates_against_schema(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(_program(name).emitted.json)
    subprocess.run(["flatc", "--binary", "-o", str(tmp_path), str(SCHEMA), str(path)], check=True)
    binary = tmp_path / f"{name}.pte"
    assert binary.read_bytes()[4:8] == b"ET12"
    subprocess.run(
        [
            "flatc",
            "--json",
            "--strict-json",
            "--raw-binary",
            "-o",
            str(tmp_path / "back"),
            str(SCHEMA),
            "--",
            str(binary),
        ],
        check=True,
    )
    text = (tmp_path / "back" / f"{name}.json").read_text()
    back = json.loads(re.sub(r"(?<![\w\"])(-?)inf\b", r"\1Infinity", text).replace(":nan", ":NaN"))
    assert len(back["execution_plan"][0]["values"]) == len(_plan(_program(name))["values"])


def test_write_program_with_c_extension(tmp_path: Path) -> None:
    pytest.importorskip("ember._C")
    program = _program("m")
    data = program.buffer
    assert data[4:8] == b"ET12"
    program.save(tmp_path / "model.pte")
    assert (tmp_path / "model.pte").read_bytes() == data


class _Counter(torch.nn.Module):
    """A mutable buffer (its initial value is mutable data) and a constant."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.full((3,), 2.0))
        self.weight = torch.nn.Parameter(torch.randn(3, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count.add_(1.0)
        return x @ self.weight + self.count


@pytest.mark.parametrize("kind", ["constants", "delegate", "mutable"])
def test_save_streams_the_in_memory_writers_bytes(kind: str, tmp_path: Path) -> None:
    """save() before .buffer writes through the C++ writer straight to the file
    (no whole-file copy in memory); the bytes are .buffer's, and the file runs."""
    pytest.importorskip("ember._C")
    if kind == "mutable":
        model, args = _Counter(), (torch.randn(2, 3),)
    else:
        model, args = SimpleConv().eval(), (torch.randn(1, 3, 8, 8),)
    edge = to_edge(export(model, args))
    if kind == "delegate":
        from ember.backends.xnnpack.partitioner import XnnpackPartitioner

        edge = edge.to_backend(XnnpackPartitioner())
    program = edge.to_executorch()
    path = tmp_path / "model.pte"
    program.save(path)
    assert "buffer" not in program.__dict__  # streamed, not built in memory
    assert path.read_bytes() == program.buffer
    method = Runtime.get().load_program(str(path)).load_method("forward")
    out = method.execute(list(args))[0]
    # The counter starts at 2 and the first call adds 1.
    want = model(*args) if kind != "mutable" else args[0] @ model.weight + 3.0
    torch.testing.assert_close(out, want.detach(), rtol=1e-4, atol=1e-4)


def test_save_names_a_path_it_cannot_write(tmp_path: Path) -> None:
    pytest.importorskip("ember._C")
    program = _program("m")
    bad = tmp_path / "missing_dir" / "model.pte"
    with pytest.raises(ValueError, match="cannot open .*missing_dir/model.pte"):
        program.save(bad)


def test_bool_constants_are_written_as_zero_or_one() -> None:
    # torch.empty(..., dtype=torch.bool) folded into a constant holds any byte;
    # PyTorch reads non-zero as true and the runtime accepts only 0/1.
    odd = torch.tensor([0, 1, 2, 255], dtype=torch.uint8).view(torch.bool)
    assert tensor_bytes(odd) == bytes([0, 1, 1, 1])

    class Masked(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("mask", odd.clone())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.logical_and(x, self.mask)

    x = torch.tensor([True, True, False, True])
    program = to_edge(export(Masked(), (x,))).to_executorch()
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    (got,) = method.execute([x])
    assert torch.equal(got, torch.logical_and(x, odd))
