"""Ember's `.pte` files read by a second, independent reader: ``flatc``
decodes the FlatBuffer region with the schema into JSON, and the test checks
that every field other runtimes of the format index without a presence check
is there (docs/pte-format.md, "What other runtimes of the format expect from
a writer"), on the tutorial's programs and on programs without constants,
with a 0-dim tensor, with an XNNPACK delegate and with dynamic shapes."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import tutorial
from torch.export import Dim, export

from ember.exir import to_edge

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "schema/program.fbs"
FLATC = shutil.which("flatc")

pytestmark = pytest.mark.skipif(FLATC is None, reason="flatc is not installed")


def flatbuffer_region(pte: bytes) -> bytes:
    """Bytes [0, program_size) as the extended header gives them (the whole
    file when it has no header): the FlatBuffer, without the segments."""
    assert pte[4:8] == b"ET12"
    if pte[8:12] != b"eh00":
        return pte
    (program_size,) = struct.unpack_from("<Q", pte, 16)
    return pte[:program_size]


def read_with_flatc(pte: bytes, tmp_path: Path) -> dict[str, Any]:
    binary = tmp_path / "program.bin"
    binary.write_bytes(flatbuffer_region(pte))
    subprocess.run(
        [FLATC, "--json", "--strict-json", "--raw-binary", "-o", str(tmp_path), str(SCHEMA),
         "--", str(binary)],
        check=True, capture_output=True, text=True,
    )
    return json.loads((tmp_path / "program.json").read_text())


# Fields a reader indexes without checking that they are present, per table.
_PLAN = ("name", "container_meta_type", "values", "inputs", "outputs", "chains", "operators",
         "delegates", "non_const_buffer_sizes")
_CHAIN = ("inputs", "outputs", "instructions")
_VALUE_FIELDS = {
    "Tensor": ("sizes", "dim_order"),
    "String": ("string_val",),
    "IntList": ("items",),
    "DoubleList": ("items",),
    "BoolList": ("items",),
    "TensorList": ("items",),
    "OptionalTensorList": ("items",),
}


def missing_fields(program: dict[str, Any]) -> Iterator[str]:
    """Where a required field is absent, as ``path: field``."""
    def need(table: dict[str, Any], fields: tuple[str, ...], where: str) -> Iterator[str]:
        yield from (f"{where}: {f}" for f in fields if f not in table)

    yield from need(program, ("execution_plan", "segments", "constant_segment"), "Program")
    cs = program.get("constant_segment", {})
    if cs.get("offsets", [None])[:1] != [0]:
        yield f"Program.constant_segment: offsets must start with the reserved 0, got {cs}"
    for p, plan in enumerate(program.get("execution_plan", [])):
        where = f"plan {p} ({plan.get('name')})"
        yield from need(plan, _PLAN, where)
        yield from need(plan.get("container_meta_type", {}), ("encoded_inp_str", "encoded_out_str"),
                        f"{where}.container_meta_type")
        for i, v in enumerate(plan.get("values", [])):
            kind = v.get("val_type")
            fields = _VALUE_FIELDS.get(kind, ())
            yield from need(v.get("val", {}), fields, f"{where} value {i} {kind}")
        for i, op in enumerate(plan.get("operators", [])):
            yield from need(op, ("name", "overload"), f"{where} operator {i}")
        for i, d in enumerate(plan.get("delegates", [])):
            yield from need(d, ("id", "processed", "compile_specs"), f"{where} delegate {i}")
            for s, spec in enumerate(d.get("compile_specs", [])):
                yield from need(spec, ("key", "value"), f"{where} delegate {i} spec {s}")
        for c, chain in enumerate(plan.get("chains", [])):
            yield from need(chain, _CHAIN, f"{where} chain {c}")
            for i, instr in enumerate(chain.get("instructions", [])):
                if instr.get("instr_args_type") in ("KernelCall", "DelegateCall"):
                    yield from need(instr.get("instr_args", {}), ("args",),
                                    f"{where} instruction {i}")


def operators(program: dict[str, Any]) -> set[str]:
    return {
        f"{o['name']}.{o['overload']}".rstrip(".")
        for plan in program["execution_plan"] for o in plan["operators"]
    }


# --- the programs -------------------------------------------------------------


class ZeroDim(torch.nn.Module):
    """A 0-dim output (and a 0-dim intermediate); no constants."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 2).sum() + x.amax()


class NoOps(torch.nn.Module):
    """Returns its input: no operators, no constants, no delegates."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class CatLists(torch.nn.Module):
    """Lists among the arguments (an IntList for the dims, a TensorList)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, y], dim=0).permute(1, 0)


def _lower(model: torch.nn.Module, args: tuple) -> bytes:
    return to_edge(export(model, args)).to_executorch().buffer


def _tutorial(name: str) -> Callable[[], bytes]:
    return lambda: tutorial.PROGRAMS[name]().program.buffer


def _xnnpack() -> bytes:
    from ember.backends.xnnpack import XnnpackPartitioner

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    edge = to_edge(export(model, (torch.randn(1, 3, 8, 8),))).to_backend(XnnpackPartitioner())
    return edge.to_executorch().buffer


def _dynamic() -> bytes:
    d = Dim("d", min=2, max=16)
    ep = export(tutorial.Basic(), (torch.randn(3, 4), torch.randn(3, 4)),
                dynamic_shapes={"x": {1: d}, "y": {1: d}})
    return to_edge(ep).to_executorch().buffer


PROGRAMS: dict[str, Callable[[], bytes]] = {
    **{f"tutorial_{n}": _tutorial(n) for n in tutorial.PROGRAMS},
    "tutorial_encode_decode": lambda: tutorial.encode_decode().buffer,
    "no_constants_no_ops": lambda: _lower(NoOps(), (torch.randn(2),)),
    "zero_dim": lambda: _lower(ZeroDim(), (torch.randn(3, 4),)),
    "lists": lambda: _lower(CatLists(), (torch.randn(2, 3), torch.randn(1, 3))),
    "xnnpack_delegate": _xnnpack,
    "dynamic_shapes": _dynamic,
}


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def decoded(request, tmp_path_factory):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    pte = PROGRAMS[request.param]()
    return request.param, read_with_flatc(pte, tmp_path_factory.mktemp(request.param))


def test_every_required_field_is_present(decoded) -> None:  # type: ignore[no-untyped-def]
    name, program = decoded
    missing = list(missing_fields(program))
    assert not missing, f"{name}:\n" + "\n".join(missing)


def test_the_programs_cover_the_cases(decoded) -> None:  # type: ignore[no-untyped-def]
    """Each program has what it is in the set for (so the check above means something)."""
    name, program = decoded
    plans = program["execution_plan"]
    values = [v for p in plans for v in p["values"]]
    tensors = [v["val"] for v in values if v["val_type"] == "Tensor"]
    if name == "no_constants_no_ops":
        assert program["constant_segment"]["offsets"] == [0]
        assert program["segments"] == []
        assert plans[0]["operators"] == [] and plans[0]["delegates"] == []
    if name == "tutorial_basic":
        assert program["constant_segment"]["offsets"] == [0]
    if name == "zero_dim":
        assert any(t["sizes"] == [] and t["dim_order"] == [] for t in tensors)
    if name == "lists":
        kinds = {v["val_type"] for v in values}
        assert {"IntList", "TensorList"} <= kinds
    if name == "xnnpack_delegate":
        assert len(plans[0]["delegates"]) == 1
        assert "Xnnpack" in plans[0]["delegates"][0]["id"]
    if name == "dynamic_shapes":
        assert any(t.get("shape_dynamism") == "DYNAMIC_BOUND" for t in tensors)
        # Other runtimes have no kernels for guards: they are not in the program.
        assert "aten::_assert_scalar" not in operators(program)
    if name.startswith("tutorial_") and name != "tutorial_basic":
        assert len(program["constant_segment"]["offsets"]) >= 1


def test_the_reader_sees_what_ember_wrote(tmp_path: Path) -> None:
    """flatc decodes the same values the emitter wrote (it reads the region
    the header delimits, not Ember's own decoder's view)."""
    manager = tutorial.PROGRAMS["final_m"]().program
    program = read_with_flatc(manager.buffer, tmp_path)
    emitted = manager.emitted.program["execution_plan"][0]
    plan = program["execution_plan"][0]
    assert plan["name"] == "forward"
    assert plan["operators"] == emitted["operators"]
    assert len(plan["values"]) == len(emitted["values"])
    assert plan["non_const_buffer_sizes"] == emitted["non_const_buffer_sizes"]
    offsets = program["constant_segment"]["offsets"]
    assert len(offsets) == 1 + len(manager.emitted.constant_buffers) > 1  # reserved entry first


# --- programs as other exporters write them run on Ember ----------------------

FIXTURES = ROOT / "tests/programs"


def test_other_exporter_fixture_has_every_field(tmp_path: Path) -> None:
    program = read_with_flatc((FIXTURES / "other_exporter_dim_order.pte").read_bytes(), tmp_path)
    assert not list(missing_fields(program))
    assert operators(program) == {"dim_order_ops::_to_dim_order_copy.out",
                                  "dim_order_ops::_clone_dim_order.out"}


def test_other_exporter_fixture_runs_with_its_input_memory_reused() -> None:
    """The output is planned over the input: each execute needs its inputs set
    again (Method.execute does), and then every run is right."""
    from ember.runtime import Runtime

    method = Runtime.get().load_program(
        str(FIXTURES / "other_exporter_dim_order.pte")).load_method("forward")
    for seed in range(3):
        x = torch.randn(1, 3, 2, 2, generator=torch.Generator().manual_seed(seed))
        (z,) = method.execute([x])
        torch.testing.assert_close(z, x.half().float(), rtol=0, atol=0)


def test_dim_order_argument_disagreeing_with_out_is_refused_at_load(tmp_path: Path) -> None:
    from ember import _C
    from ember.runtime import EmberError, Runtime

    program = read_with_flatc((FIXTURES / "other_exporter_dim_order.pte").read_bytes(), tmp_path)
    program["execution_plan"][0]["values"][7]["val"]["dim_order"] = [0, 1, 2, 3]  # y contiguous
    pte = bytes(_C.write_program(json.dumps(program), [], []))
    with pytest.raises(EmberError, match=r"dim_order \[0, 2, 3, 1\] disagrees with out's dim "
                                         r"order \[0, 1, 2, 3\]"):
        Runtime.get().load_program(pte).load_method("forward")


class MemoryFormats(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        cl = (x * 2).to(memory_format=torch.channels_last)
        half = cl.to(torch.float16)
        back = half.clone(memory_format=torch.contiguous_format)
        return cl + 1, back, x.to(torch.int32)


@pytest.mark.parametrize("dim_order_ops", [True, False])
def test_ember_emits_dim_order_ops_by_default(dim_order_ops: bool, tmp_path: Path) -> None:
    from ember.exir import ExecutorchBackendConfig
    from ember.runtime import Runtime

    x = torch.randn(2, 3, 4, 5) * 10
    manager = to_edge(export(MemoryFormats(), (x,))).to_executorch(
        ExecutorchBackendConfig(dim_order_ops=dim_order_ops))
    ops = operators(read_with_flatc(manager.buffer, tmp_path))
    dim_order = {"dim_order_ops::_to_dim_order_copy.out", "dim_order_ops::_clone_dim_order.out"}
    aten = {"aten::_to_copy.out", "aten::clone.out"}
    assert ops & (dim_order if dim_order_ops else aten)
    assert not ops & (aten if dim_order_ops else dim_order)
    method = Runtime.get().load_program(manager.buffer).load_method("forward")
    for got, want in zip(method.execute([x]), MemoryFormats()(x), strict=True):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)
