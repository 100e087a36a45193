"""3×3 stride-1 convolutions through the tutorial's flow take the Winograd
F(4×4, 3×3) path (kernels/portable/util/conv_winograd.h) when they are large
enough: checked against float64 within the bound stated there (relative to the
output's magnitude), against the im2col path (EMBER_WINOGRAD=0, in a
subprocess), and through a ResNet-style block with batch norm, ReLU and a
residual add on both paths."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn
from torch.export import export

pytest.importorskip("ember._C")
from ember.exir import ExecutorchBackendConfig, to_edge
from ember.runtime import Runtime

# |error| ≤ BOUND · max|output|: the bound conv_winograd.h states (measured
# 2e-6 to 9e-6 for 16 to 256 input channels; im2col stays near 3e-7).
BOUND = 3e-5


class Block(nn.Module):
    """A ResNet basic block (BN folded by to_edge's passes or run as its own op)."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


def _program(model: nn.Module, example: torch.Tensor) -> bytes:
    # The NCHW convolution kernel's Winograd path: not the blocked layout.
    config = ExecutorchBackendConfig(nchw16c_layout=False)
    return to_edge(export(model, (example,))).to_executorch(config).buffer


def _relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    scale = want.abs().max().item()
    assert scale > 0.1, "a collapsed output checks nothing"
    return (got.double() - want).abs().max().item() / scale


def _run_with_im2col(path: str, input_path: str, out_path: str) -> None:
    """Runs the program in a fresh process with EMBER_WINOGRAD=0."""
    code = textwrap.dedent(
        f"""
        import torch
        from ember.runtime import Runtime
        x = torch.load({input_path!r})
        m = Runtime.get().load_program({path!r}).load_method("forward")
        torch.save(m.execute((x,))[0], {out_path!r})
        """
    )
    env = dict(os.environ, EMBER_WINOGRAD="0")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


@pytest.mark.parametrize(
    ("c_in", "c_out", "hw", "padding", "bias"),
    [(32, 48, (30, 30), 1, True), (16, 16, (17, 22), 0, False), (64, 40, (28, 28), 1, True),
     (96, 80, (14, 14), 1, True), (24, 32, (56, 56), 1, False), (64, 72, (7, 7), 1, True)],
    ids=["32to48_30x30", "16to16_17x22_unpadded", "64to40_28x28", "96to80_14x14",
         "24to32_56x56_tiles_as_columns", "64to72_7x7_f2x2"],
)
def test_winograd_conv_matches_float64_and_im2col(tmp_path, c_in, c_out, hw, padding, bias):
    torch.manual_seed(0)
    conv = nn.Conv2d(c_in, c_out, 3, padding=padding, bias=bias).eval()
    x = torch.randn(1, c_in, *hw)
    path = tmp_path / "conv.pte"
    path.write_bytes(_program(conv, x))
    method = Runtime.get().load_program(str(path)).load_method("forward")
    got = method.execute((x,))[0]
    want = nn.functional.conv2d(
        x.double(), conv.weight.double(), None if conv.bias is None else conv.bias.double(),
        padding=padding,
    )
    assert _relative_error(got, want) <= BOUND
    # The transformed weight (36 matrices of c_out × c_in, 16 for F(2×2, 3×3)
    # on small planes) was packed at load.
    assert method.prepared_bytes >= (16 if hw == (7, 7) else 36) * c_out * c_in * 4

    torch.save(x, tmp_path / "x.pt")
    _run_with_im2col(str(path), str(tmp_path / "x.pt"), str(tmp_path / "im2col.pt"))
    im2col = torch.load(tmp_path / "im2col.pt")
    assert _relative_error(im2col, want) <= 2e-6
    assert not torch.equal(im2col, got), "EMBER_WINOGRAD=0 should take the im2col path"
    assert _relative_error(got, im2col.double()) <= BOUND


def test_resnet_block_on_the_winograd_path(tmp_path):
    torch.manual_seed(1)
    block = Block(32).eval()
    for bn in (block.bn1, block.bn2):  # Ordinary statistics: outputs of magnitude ~1.
        bn.running_mean.uniform_(-0.1, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 32, 24, 24)
    method = Runtime.get().load_program(_program(block, x)).load_method("forward")
    got = method.execute((x,))[0]
    with torch.no_grad():
        want = block.double()(x.double())
    assert _relative_error(got, want) <= BOUND
