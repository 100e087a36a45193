"""Constant methods (#17): ``to_edge(programs, constant_methods={...})`` stores
values a runner reads (max sequence length, BOS/EOS ids, ...) as methods
without inputs; Python, ember-run and ember-inspect read them back."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch
from installed import tool

from ember.backends.xnnpack.partitioner import XnnpackPartitioner
from ember.exir import to_edge
from ember.runtime import Runtime


class AddOne(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, torch.ones(3, 3)) + 1


CONSTANTS = {
    "get_max_seq_len": 128,
    "use_kv_cache": True,
    "get_bos_id": 1,
    "get_eos_ids": [2, 7],
    "model_name": "tiny-llama",
    "rope_theta": 10000.5,
    "flags": [True, False],
    "scales": [0.5, 2],
    "big": 2**62,
    "table": torch.arange(6, dtype=torch.int32).reshape(2, 3),
}


def _program(constants=CONSTANTS, partition: bool = False):
    edge = to_edge(torch.export.export(AddOne(), (torch.randn(2, 3),)), constant_methods=constants)
    if partition:
        edge = edge.to_backend(XnnpackPartitioner())
    return edge.to_executorch()


@pytest.mark.parametrize("partition", [False, True])
def test_values_read_back_from_python(partition: bool) -> None:
    et = _program(partition=partition)
    assert et.constant_methods.keys() == CONSTANTS.keys()
    program = Runtime.get().load_program(et.buffer)
    assert program.method_names == ["forward", *CONSTANTS]
    for name, want in CONSTANTS.items():
        method = program.load_method(name)
        assert method.metadata()["inputs"] == []
        (got,) = method.execute([])
        if isinstance(want, torch.Tensor):
            assert torch.equal(got, want)
        else:
            assert got == (list(want) if isinstance(want, list) else want), name
            assert type(got) is type(want) or name == "scales"
    x = torch.randn(2, 3)
    torch.testing.assert_close(program.load_method().execute([x])[0], AddOne()(x))


def test_cli_prints_and_inspects_them(tmp_path: Path) -> None:
    pte = tmp_path / "m.pte"
    _program().save(pte)
    run = subprocess.run([tool("ember-run"), str(pte), "--method", "get_eos_ids", "--iters", "1"],
                         capture_output=True, text=True, check=True)
    assert "output 0: IntList [2, 7]" in run.stdout
    run = subprocess.run([tool("ember-run"), str(pte), "--method", "model_name", "--iters", "1"],
                         capture_output=True, text=True, check=True)
    assert 'output 0: String "tiny-llama"' in run.stdout
    inspect = subprocess.run([tool("ember-inspect"), str(pte)], capture_output=True, text=True,
                             check=True).stdout
    assert "method 'get_max_seq_len'" in inspect and "Int 128" in inspect
    assert "Double 10000.5" in inspect and "BoolList [true, false]" in inspect


def test_bad_names_and_values_are_refused() -> None:
    ep = torch.export.export(AddOne(), (torch.randn(2, 3),))
    with pytest.raises(ValueError, match="has the name of a method"):
        to_edge(ep, constant_methods={"forward": 1})
    with pytest.raises(ValueError, match="a dict cannot be stored"):
        to_edge(ep, constant_methods={"config": {"a": 1}})
    with pytest.raises(ValueError, match="does not fit in int64"):
        to_edge(ep, constant_methods={"huge": 2**70})
    with pytest.raises(ValueError, match="a list cannot be stored"):
        to_edge(ep, constant_methods={"mixed": [1, "a"]})
