"""AOT -> .pte -> C++ runtime, for the tutorial's models (needs ``ember._C``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ember import exir
from ember.exir import ExecutorchBackendConfig
from models import Basic, Decode, Encode, Foo, M, SimpleConv
from torch.export import export

pytest.importorskip("ember._C")
from ember.runtime import Runtime

CASES = {
    "basic": (Basic(), (torch.randn(3, 3), torch.randn(3, 3))),
    "foo": (Foo(), (torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2))),
    "conv": (SimpleConv(), (torch.randn(1, 3, 16, 16),)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_runtime_matches_eager(name: str) -> None:
    model, args = CASES[name]
    program = exir.to_edge(export(model, args)).to_executorch()
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    (out,) = method.execute(list(args))
    torch.testing.assert_close(out, model(*args), rtol=1e-5, atol=1e-5)


def test_tutorial_final_example(tmp_path: Path) -> None:
    model = M()
    example_args = (torch.randn(3, 4),)
    pre_autograd_aten_dialect = export(model, example_args).module()
    aten_dialect = export(pre_autograd_aten_dialect, example_args)
    edge_program: exir.EdgeProgramManager = exir.to_edge(aten_dialect)
    executorch_program: exir.ExecutorchProgramManager = edge_program.to_executorch(
        ExecutorchBackendConfig(passes=[])
    )
    path = tmp_path / "model.pte"
    with open(path, "wb") as file:
        file.write(executorch_program.buffer)
    method = Runtime.get().load_program(str(path)).load_method("forward")
    (out,) = method.execute(list(example_args))
    torch.testing.assert_close(out, model(*example_args))


def test_encode_decode_methods_run() -> None:
    edge = exir.to_edge(
        {
            "encode": export(Encode(), (torch.randn(1, 10),)),
            "decode": export(Decode(), (torch.randn(1, 5),)),
        }
    )
    program = Runtime.get().load_program(edge.to_executorch().buffer)
    assert sorted(program.method_names) == ["decode", "encode"]
    (encoded,) = program.load_method("encode").execute([torch.randn(1, 10)])
    (decoded,) = program.load_method("decode").execute([torch.randn(1, 5)])
    assert encoded.shape == (1, 5) and decoded.shape == (1, 10)
