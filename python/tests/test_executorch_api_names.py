"""The names ExecuTorch's docs and tutorials use, under ``ember`` (issue #20,
"The names users know"): each does the real thing, checked on real programs
against float64 eager references (``docs/executorch-api.md`` has the table).
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
import torch
from torch.export import export

from ember.backends.xnnpack import XnnpackPartitioner
from ember.exir import ExecutorchBackendConfig, ExecutorchProgramManager, to_edge
from ember.exir.dialects.edge._ops import EdgeOpOverload
from ember.extension.pybindings.portable_lib import (
    _get_operator_names,
    _load_for_executorch,
    _load_for_executorch_from_buffer,
)
from ember.runtime import EmberError, Runtime, Verification

aten = torch.ops.aten


# -- helpers -----------------------------------------------------------------


def assert_matches_float64(got: torch.Tensor, model: torch.nn.Module, inputs: tuple) -> None:
    """``got`` against the model run in float64, within 1e-5 of the output's magnitude."""
    ref = copy.deepcopy(model).double()(*[x.double() for x in inputs])
    assert got.shape == ref.shape and got.dtype == torch.float32
    err = (got.double() - ref).abs().max().item()
    assert err <= 1e-5 * max(ref.abs().max().item(), 1.0), err


def run(buffer: bytes, inputs: tuple, method: str = "forward") -> list[torch.Tensor]:
    return Runtime.get().load_program(buffer).load_method(method).execute(list(inputs))


def graph_ops(ep) -> set:
    """The ATen ops of an edge graph's call nodes."""
    return {
        n.target.op
        for n in ep.graph.nodes
        if n.op == "call_function" and isinstance(n.target, EdgeOpOverload)
    }


def delegated_graphs(ep) -> list:
    """The graphs inside ``ep``'s lowered modules."""
    return [
        getattr(ep.graph_module, n.target).original_module.graph
        for n in ep.graph.nodes
        if n.op == "get_attr" and n.target.startswith("lowered_module")
    ]


def operators(manager: ExecutorchProgramManager, method: int = 0) -> set[str]:
    plan = manager.emitted.program["execution_plan"][method]
    return {f"{o['name']}.{o['overload']}" for o in plan["operators"]}


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 12)
        self.fc2 = torch.nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))




# -- runtime: Verification -------------------------------------------------------------


def test_verification_minimal_defers_the_plan_checks_to_load_method() -> None:
    from ember import _C

    manager = to_edge(export(Mlp(), (torch.randn(3, 16),))).to_executorch()
    e = manager.emitted
    program = copy.deepcopy(e.program)
    program["execution_plan"][0]["chains"][0]["instructions"][0]["instr_args"]["op_index"] = 99
    bad = bytes(_C.write_program(json.dumps(program), e.constant_buffers, e.delegate_blobs,
                                 named_blobs=e.named_blobs))
    rt = Runtime.get()
    with pytest.raises(EmberError, match="99"):
        rt.load_program(bad, verification=Verification.InternalConsistent)
    with pytest.raises(EmberError, match="99"):
        rt.load_program(bad)  # the default is InternalConsistent
    loaded = rt.load_program(bad, verification=Verification.Minimal)  # FlatBuffer verifier only
    with pytest.raises(EmberError):
        loaded.load_method("forward")
    with pytest.raises(ValueError, match="Verification"):
        rt.load_program(manager.buffer, verification="everything")
    good = rt.load_program(io.BytesIO(manager.buffer), verification=Verification.Minimal)
    assert good.method_names == ["forward"]


# -- extension.pybindings.portable_lib ----------------------------------------------------


def test_portable_lib_loads_files_and_buffers_and_matches_eager(tmp_path: Path) -> None:
    torch.manual_seed(5)
    model, x = Mlp(), torch.randn(3, 16)
    enc = export(model, (x,))
    decoder = torch.nn.Linear(5, 2)
    dec = export(decoder, (torch.randn(3, 5),))
    manager = to_edge({"forward": enc, "decode": dec}).to_backend(
        {"forward": XnnpackPartitioner()}
    ).to_executorch()
    path = tmp_path / "model.pte"
    manager.save(path)
    for module in (
        _load_for_executorch(str(path)),
        _load_for_executorch(path, program_verification=Verification.Minimal),
        _load_for_executorch_from_buffer(manager.buffer),
        _load_for_executorch_from_buffer(bytearray(manager.buffer)),
    ):
        assert module.method_names() == {"forward", "decode"}
        (y,) = module.forward((x,))
        assert isinstance(y, torch.Tensor)
        assert_matches_float64(y, model, (x,))
        (z,) = module.run_method("decode", [y])
        assert_matches_float64(z, decoder, (y,))
        assert module.method_meta("decode")["inputs"][0]["sizes"] == [3, 5]
    with pytest.raises(TypeError, match="list or tuple"):
        module.forward(x)
    with pytest.raises(NotImplementedError, match="ETDump"):
        _load_for_executorch(str(path), enable_etdump=True)
    with pytest.raises(EmberError):
        _load_for_executorch_from_buffer(manager.buffer[:100])
    assert "aten::addmm.out" in _get_operator_names()


def test_the_tutorials_final_program_with_executorch_names(tmp_path: Path) -> None:
    """The end-to-end example, written as ExecuTorch's docs write it."""
    from models import M

    import ember.exir as exir

    torch.manual_seed(6)
    model, x = M(), torch.randn(3, 4)
    aten_dialect = export(export(model, (x,)).module(), (x,))
    edge_program: exir.EdgeProgramManager = exir.to_edge(aten_dialect)
    executorch_program: exir.ExecutorchProgramManager = edge_program.to_executorch(
        ExecutorchBackendConfig(passes=[])
    )
    path = tmp_path / "model.pte"
    with open(path, "wb") as file:
        file.write(executorch_program.buffer)
    (y,) = _load_for_executorch(str(path)).forward((x,))
    assert_matches_float64(y, model, (x,))
