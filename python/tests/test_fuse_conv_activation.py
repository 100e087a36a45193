"""Convolution + residual add + activation fused into
``ember_fused::fused_convolution`` (passes/fuse_conv_activation.py,
kernels/portable/op_fused_convolution.cpp): which chains fuse, which must not,
and the fused kernel against eager (relative to the output's magnitude) on
every kernel path — GEMM (1×1, im2col, strided, grouped, 1-D), Winograd
(3×3 stride 1), depthwise — with and without bias, residual and bounds, on
contiguous and channels-last residuals."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.exir.operator import ember_fused
from ember.runtime import Runtime
from magnitude import assert_close_to_magnitude

F = torch.nn.functional


def _targets(program) -> list[str]:
    ep = program.exported_program()
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def _fused(program) -> int:
    return sum("fused_convolution" in t for t in _targets(program))


def _run(model: torch.nn.Module, inputs: tuple, **config):
    program = to_edge(export(model, inputs)).to_executorch(ExecutorchBackendConfig(**config))
    outs = Runtime.get().load_program(program.buffer).load_method("forward").execute(list(inputs))
    return program, outs


def _close(got: torch.Tensor, want: torch.Tensor, rtol: float = 2e-5) -> None:
    assert_close_to_magnitude(got, want, rtol)


class Block(torch.nn.Module):
    """conv [+ residual] [activation], the chain the pass looks for."""

    def __init__(self, cin, cout, k, stride=1, padding=0, groups=1, bias=True, dims=2,
                 residual=True, act="relu", residual_first=False) -> None:
        super().__init__()
        conv = torch.nn.Conv2d if dims == 2 else torch.nn.Conv1d
        self.conv = conv(cin, cout, k, stride=stride, padding=padding, groups=groups, bias=bias)
        self.residual, self.act, self.residual_first = residual, act, residual_first

    def forward(self, x, r):
        y = self.conv(x)
        if self.residual:
            y = r + y if self.residual_first else y + r
        if self.act == "relu":
            y = F.relu(y)
        elif self.act == "relu6":
            y = F.relu6(y)
        elif self.act == "hardtanh":
            y = F.hardtanh(y, -0.5, 0.75)
        elif self.act == "clamp_min":
            y = torch.clamp(y, min=-0.1)
        return y


def _inputs(block: Block, shape: tuple, seed: int = 0, channels_last: bool = False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    with torch.no_grad():
        out_shape = block.conv(x).shape
    r = torch.randn(*out_shape, generator=g)
    if channels_last:
        r = r.to(memory_format=torch.channels_last)
    return x, r


# (cin, cout, k, stride, padding, groups, dims, input shape): one per kernel path.
PATHS = {
    "pointwise": (16, 24, 1, 1, 0, 1, 2, (2, 16, 9, 7)),
    "im2col": (8, 20, 3, 2, 1, 1, 2, (1, 8, 15, 13)),
    "winograd": (32, 32, 3, 1, 1, 1, 2, (1, 32, 20, 20)),
    "grouped": (12, 18, 3, 1, 1, 3, 2, (1, 12, 10, 10)),
    "depthwise": (16, 16, 3, 1, 1, 16, 2, (1, 16, 12, 12)),
    "depthwise_s2": (16, 16, 3, 2, 1, 16, 2, (2, 16, 13, 13)),
    "depthwise_mult2": (8, 16, 3, 1, 1, 8, 2, (1, 8, 9, 11)),
    "conv1d": (8, 12, 5, 1, 2, 1, 1, (2, 8, 33)),
    "deep_k": (300, 40, 1, 1, 0, 1, 2, (1, 300, 6, 6)),  # k crosses the GEMM's k-blocks
}


CHAINS = [(True, "relu", True), (True, None, True), (False, "relu", True), (False, "relu6", True),
          (True, "hardtanh", True), (True, "clamp_min", False), (False, "relu", False)]


# The ISA paths of the GEMM under the epilogue are gemm_test.cpp's (every ISA the host has).
@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("residual,act,bias", CHAINS)
def test_fused_chain_matches_eager(path, residual, act, bias) -> None:
    cin, cout, k, stride, padding, groups, dims, shape = PATHS[path]
    torch.manual_seed(1)
    block = Block(cin, cout, k, stride, padding, groups, bias, dims, residual, act).eval()
    x, r = _inputs(block, shape)
    program, outs = _run(block, (x, r))
    assert _fused(program) == 1
    targets = " ".join(_targets(program))
    assert "relu" not in targets and "aten.add" not in targets and "clamp" not in targets
    with torch.no_grad():
        _close(outs[0], block(x, r))


@pytest.mark.parametrize("path", ["pointwise", "winograd", "depthwise", "depthwise_s2"])
def test_channels_last_residual(path) -> None:
    cin, cout, k, stride, padding, groups, dims, shape = PATHS[path]
    block = Block(cin, cout, k, stride, padding, groups, True, dims).eval()
    x, r = _inputs(block, shape, channels_last=True)
    program, outs = _run(block, (x, r))
    assert _fused(program) == 1
    with torch.no_grad():
        _close(outs[0], block(x, r))


def test_residual_first_operand_fuses() -> None:
    block = Block(8, 8, 3, padding=1, residual_first=True).eval()
    x, r = _inputs(block, (1, 8, 10, 10))
    program, outs = _run(block, (x, r))
    assert _fused(program) == 1
    with torch.no_grad():
        _close(outs[0], block(x, r))


class SharedConv(torch.nn.Module):
    """The convolution's output is read twice: nothing may fuse into it."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x, r):
        y = self.conv(x)
        return F.relu(y + r), y


class Broadcast(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x, r):
        return F.relu(self.conv(x) + r)  # r is [1, 4, 1, 1]: broadcast, not a residual


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x, r):
        return torch.add(self.conv(x), r, alpha=2)


def test_chains_that_must_not_fuse() -> None:
    x = torch.randn(1, 4, 8, 8)
    for model, r in ((SharedConv(), torch.randn(1, 4, 8, 8)), (Broadcast(), torch.randn(1, 4, 1, 1)),
                     (Scaled(), torch.randn(1, 4, 8, 8))):
        model.eval()
        program, outs = _run(model, (x, r))
        with torch.no_grad():
            want = model(x, r)
        want = want if isinstance(want, tuple) else (want,)
        for got, ref in zip(outs, want, strict=True):
            _close(got, ref)
        if isinstance(model, SharedConv):
            assert _fused(program) == 0
        if isinstance(model, Broadcast | Scaled):
            # The add stays; only the relu (Broadcast) may not fuse past it either.
            assert "aten.add" in " ".join(_targets(program))


def test_config_off_keeps_aten_ops() -> None:
    block = Block(8, 8, 3, padding=1).eval()
    x, r = _inputs(block, (1, 8, 10, 10))
    program, outs = _run(block, (x, r), fuse_conv_activation=False)
    assert _fused(program) == 0
    assert any("relu" in t for t in _targets(program))
    with torch.no_grad():
        _close(outs[0], block(x, r))


class BasicBlock(torch.nn.Module):
    """ResNet's basic block: conv-bn-relu, conv-bn, + identity, relu."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        y += x
        return F.relu(y)


def test_resnet_basic_block_fuses_both_convolutions() -> None:
    block = BasicBlock(16).eval()
    with torch.no_grad():
        for m in (block.bn1, block.bn2):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 16, 14, 14)
    program = to_edge(export(block, (x,))).to_executorch()
    outs = Runtime.get().load_program(program.buffer).load_method("forward").execute([x])
    assert _fused(program) == 2  # conv1+bn1+relu, conv2+bn2+identity+relu
    assert _targets(program).count("aten.add.out") == 0
    with torch.no_grad():
        _close(outs[0], block(x))


def test_eager_reference_is_the_unfused_chain() -> None:
    x, w, b, r = torch.randn(1, 3, 8, 8), torch.randn(5, 3, 3, 3), torch.randn(5), None
    r = torch.randn(1, 5, 8, 8)
    got = ember_fused.ops.fused_convolution(x, w, b, [1, 1], [1, 1], [1, 1], 1, r, 0.0, 6.0)
    want = torch.clamp(F.conv2d(x, w, b, padding=1) + r, 0.0, 6.0)
    assert torch.equal(got, want)
