"""The tutorial's static-shape, non-delegated programs, built the way the
tutorial builds them, each with the inputs it runs on and what eager gives.

Shared by the end-to-end tests through the bindings (test_aot_end_to_end.py)
and through ember-run (test_runtime.py). Encode/Decode call ``randn`` in
``forward``, so they have their own tests there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from ember import exir
from ember.exir import EdgeProgramManager, ExecutorchBackendConfig, ExecutorchProgramManager
from ember.exir.passes import MemoryPlanningPass
from models import Basic, ConvertReluToSigmoid, Decode, Encode, Foo, M, SimpleConv
from torch.export import ExportedProgram, export

# The tutorial's last block uses export_for_training; torch 2.10 removed it,
# and export() now gives the same training (pre-dispatch) IR.
export_for_training = getattr(torch.export, "export_for_training", export)

# Measured worst case over seeds: SimpleConv (27-term dot products, another
# accumulation order than eager) reaches ~0.3 of this bound; the rest are exact
# or within one ulp. So no case needs a looser tolerance.
RTOL, ATOL = 1e-5, 1e-6


@dataclass
class TutorialProgram:
    program: ExecutorchProgramManager
    inputs: tuple[torch.Tensor, ...]
    expected: tuple[torch.Tensor, ...]


def _eager(fn: Callable[..., torch.Tensor], inputs: tuple[torch.Tensor, ...]) -> tuple:
    with torch.no_grad():
        out = fn(*inputs)
    return out if isinstance(out, tuple) else (out,)


def simple_conv() -> TutorialProgram:
    model = SimpleConv()
    example_args = (torch.randn(1, 3, 256, 256),)
    aten_dialect: ExportedProgram = export(model, example_args)
    edge_program: EdgeProgramManager = exir.to_edge(aten_dialect)
    x = (torch.randn(1, 3, 256, 256),)
    return TutorialProgram(edge_program.to_executorch(), x, _eager(model, x))


def basic() -> TutorialProgram:
    example_args = (torch.randn(3, 3), torch.randn(3, 3))
    aten_dialect: ExportedProgram = export(Basic(), example_args)
    program = exir.to_edge(aten_dialect).to_executorch()
    inputs = (torch.ones(3, 3), torch.ones(3, 3))  # as the tutorial runs it
    return TutorialProgram(program, inputs, _eager(Basic(), inputs))


def convert_relu_to_sigmoid() -> TutorialProgram:
    model = SimpleConv()
    example_args = (torch.randn(1, 3, 256, 256),)
    aten_dialect: ExportedProgram = export(model, example_args)
    edge_program: EdgeProgramManager = exir.to_edge(aten_dialect)
    transformed_edge_program = edge_program.transform((ConvertReluToSigmoid(),))
    x = (torch.randn(1, 3, 256, 256),)
    return TutorialProgram(
        transformed_edge_program.to_executorch(), x, _eager(lambda t: model.conv(t).sigmoid(), x)
    )


def foo() -> TutorialProgram:
    example_args = (torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2))
    aten_dialect: ExportedProgram = export(Foo(), example_args)
    edge_program: EdgeProgramManager = exir.to_edge(aten_dialect)
    executorch_program: ExecutorchProgramManager = edge_program.to_executorch(
        ExecutorchBackendConfig(
            passes=[],  # User-defined passes
            memory_planning_pass=MemoryPlanningPass(),  # Default memory planning pass
        )
    )
    inputs = (torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2))
    return TutorialProgram(executorch_program, inputs, _eager(Foo(), inputs))


def final_m() -> TutorialProgram:
    """The last code block: parameter + linear + clamp."""
    model = M()
    example_args = (torch.randn(3, 4),)
    pre_autograd_aten_dialect = export_for_training(model, example_args).module()
    aten_dialect: ExportedProgram = export(pre_autograd_aten_dialect, example_args)
    edge_program: exir.EdgeProgramManager = exir.to_edge(aten_dialect)
    executorch_program: exir.ExecutorchProgramManager = edge_program.to_executorch(
        ExecutorchBackendConfig(
            passes=[],  # User-defined passes
        )
    )
    x = (torch.randn(3, 4),)
    return TutorialProgram(executorch_program, x, _eager(model, x))


PROGRAMS: dict[str, Callable[[], TutorialProgram]] = {
    "simple_conv": simple_conv,
    "basic": basic,
    "convert_relu_to_sigmoid": convert_relu_to_sigmoid,
    "foo": foo,
    "final_m": final_m,
}


def encode_decode() -> ExecutorchProgramManager:
    """Encode and Decode as the two methods of one program."""
    encode_args = (torch.randn(1, 10),)
    aten_encode: ExportedProgram = export(Encode(), encode_args)
    decode_args = (torch.randn(1, 5),)
    aten_decode: ExportedProgram = export(Decode(), decode_args)
    edge_program: EdgeProgramManager = exir.to_edge({"encode": aten_encode, "decode": aten_decode})
    return edge_program.to_executorch()


def save(program: ExecutorchProgramManager, directory: Path) -> Path:
    """Write ``model.pte`` as the tutorial's last code block does."""
    path = directory / "model.pte"
    with open(path, "wb") as file:
        file.write(program.buffer)
    return path
