"""Zero padding folded into the convolution that reads it (to_executorch):
what is folded, what never is, and that programs still match eager in the
C++ runtime (relative to the output's magnitude)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.runtime import Runtime  # noqa: E402


def _ops(program, name: str) -> int:
    ep = program.exported_program()
    return sum(name in str(n.target) for n in ep.graph.nodes if n.op == "call_function")


def _check(model: torch.nn.Module, x: torch.Tensor, **config):
    torch.manual_seed(0)
    program = to_edge(export(model, (x,))).to_executorch(ExecutorchBackendConfig(**config))
    (got,) = Runtime.get().load_program(program.buffer).load_method("forward").execute([x])
    with torch.no_grad():
        want = model(x)
    scale = float(want.abs().max())
    assert scale > 1e-3
    assert float((got - want).abs().max()) <= 1e-5 * scale
    return program


class PadConv(torch.nn.Module):
    def __init__(self, pad, dims: int = 2, conv_padding: int = 0, value: float = 0.0,
                 groups: int = 1, kernel: int = 3) -> None:
        super().__init__()
        conv = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[dims]
        self.pad, self.value = pad, value
        self.conv = conv(4, 8, kernel, padding=conv_padding, groups=groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.pad(x, self.pad, value=self.value))


@pytest.mark.parametrize("pad,dims,shape,conv_padding,groups,kernel", [
    ((1, 1, 1, 1), 2, (2, 4, 9, 10), 0, 1, 3),        # TF "same", stride 1
    ((0, 0, 0, 0), 2, (2, 4, 7, 7), 0, 1, 1),         # TF's pad before a 1x1 conv
    ((2, 2, 1, 1), 2, (1, 4, 8, 9), 1, 4, 3),         # W 2, H 1, on top of the conv's own
    ((1, 1), 1, (2, 4, 20), 0, 1, 3),
    ((1, 1, 2, 2, 0, 0), 3, (1, 4, 5, 6, 7), 0, 1, 3),
    ((1, 1, 0, 0, 0, 0), 2, (1, 4, 6, 6), 0, 1, 3),   # N and C pads of zero
])
def test_symmetric_zero_pads_are_folded(pad, dims, shape, conv_padding, groups, kernel) -> None:
    program = _check(PadConv(pad, dims, conv_padding, groups=groups, kernel=kernel),
                     torch.randn(*shape))
    assert _ops(program, "constant_pad_nd") == 0


@pytest.mark.parametrize("model", [
    PadConv((0, 1, 0, 1)),                 # TF "same" for stride 2 on even sizes
    PadConv((1, 1, 1, 1), value=0.5),      # not zero
    PadConv((-1, -1, 0, 0), kernel=1),     # a crop
    PadConv((0, 0, 0, 0, 1, 1)),           # pads the channels (conv would see 6 channels)
])
def test_other_pads_are_left(model) -> None:
    channels = 2 if model.pad == (0, 0, 0, 0, 1, 1) else 4
    model.conv = torch.nn.Conv2d(4, 8, model.conv.kernel_size)
    program = _check(model, torch.randn(2, channels, 9, 9))
    assert _ops(program, "constant_pad_nd") == 1


class PadReadTwice(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.pad(x, (1, 1, 1, 1))
        return self.conv(y) + y.mean()


def test_a_pad_with_other_readers_is_left() -> None:
    program = _check(PadReadTwice(), torch.randn(1, 4, 8, 8))
    assert _ops(program, "constant_pad_nd") == 1


def test_folding_can_be_switched_off() -> None:
    program = _check(PadConv((1, 1, 1, 1)), torch.randn(2, 4, 9, 10), fold_padding=False)
    assert _ops(program, "constant_pad_nd") == 1
