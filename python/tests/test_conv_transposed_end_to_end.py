"""nn.ConvTranspose1d/2d through the tutorial's flow (export -> to_edge ->
to_executorch -> C++ runtime) against eager, and a program with a bad
transposed-convolution configuration refused at load_method (the kernel's
load check) with a message naming the argument."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export import export

pytest.importorskip("ember._C")
from ember.exir import to_edge
from ember.runtime import EmberError, Runtime

# float32, outputs of magnitude ~1-10: another summation order than eager.
RTOL, ATOL = 1e-5, 1e-5


class Decoder2d(nn.Module):
    """A small upsampling decoder: strided, grouped, dilated, with and without bias."""

    def __init__(self) -> None:
        super().__init__()
        self.up1 = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(6, 6, 4, stride=2, padding=1, groups=3, bias=False)
        self.dw = nn.ConvTranspose2d(6, 6, 3, padding=2, dilation=2, groups=6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dw(torch.relu(self.up2(torch.relu(self.up1(x)))))


class Decoder1d(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.ConvTranspose1d(4, 3, 5, stride=3, padding=1, output_padding=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.up(x))


def _lower(model: nn.Module, example: torch.Tensor):
    return to_edge(export(model, (example,))).to_executorch()


def _run(program, inputs):
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    return method.execute(inputs)


@pytest.mark.parametrize(
    ("model", "shape"),
    [(Decoder2d, (2, 8, 5, 7)), (Decoder1d, (3, 4, 11))],
    ids=["conv_transpose2d", "conv_transpose1d"],
)
def test_conv_transpose_module_matches_eager(model, shape) -> None:
    torch.manual_seed(0)
    m = model().eval()
    example = torch.randn(shape)
    program = _lower(m, example)
    x = torch.randn(shape)
    with torch.no_grad():
        want = m(x)
    (got,) = _run(program, [x])
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)


def test_conv_transpose2d_channels_last_input_matches_eager() -> None:
    torch.manual_seed(1)
    m = Decoder2d().eval()
    x = torch.randn(1, 8, 6, 6).to(memory_format=torch.channels_last)
    program = _lower(m, x)
    with torch.no_grad():
        want = m(x)
    (got,) = _run(program, [x])
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)


def test_bad_output_padding_fails_at_load_method() -> None:
    # Eager refuses output_padding >= both stride and dilation before export
    # can trace it, so the valid program's convolution is edited afterwards,
    # as a buggy pass or a hand-written program would.
    m = Decoder1d().eval()
    edge = to_edge(export(m, (torch.randn(1, 4, 6),)))
    conv = next(n for n in edge.exported_program().graph.nodes
                if n.op == "call_function" and "convolution" in str(n.target))
    args = list(conv.args)
    assert args[6] is True  # transposed
    args[7] = [3]  # stride 3, dilation 1: output_padding must be below 3
    conv.args = tuple(args)
    program = edge.to_executorch()
    loaded = Runtime.get().load_program(program.buffer)
    with pytest.raises(EmberError, match=r"aten::convolution\.out: output_padding: must be "
                                         r"smaller than either stride or dilation, but spatial "
                                         r"dim 0 has output_padding 3, stride 3 and dilation 1"):
        loaded.load_method("forward")
