"""Batch norm folded into the convolution before it (to_executorch): which
pairs are folded, which never are, and that folded programs match eager in
the C++ runtime (relative to the output's magnitude)."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.runtime import Runtime  # noqa: E402


def _targets(program) -> list[str]:
    ep = program.exported_program()
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def _batch_norms(program) -> int:
    return sum("batch_norm" in t for t in _targets(program))


def _randomize(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Running statistics and affine parameters far from their defaults, so a
    wrong fold cannot pass for a right one."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g))
            m.running_var.copy_(torch.rand(m.num_features, generator=g) * 2 + 0.1)
            if m.affine:
                m.weight.data.copy_(torch.randn(m.num_features, generator=g))
                m.bias.data.copy_(torch.randn(m.num_features, generator=g))
    return model.eval()


def _check(model: torch.nn.Module, x: torch.Tensor, **config) -> object:
    program = to_edge(export(model, (x,))).to_executorch(ExecutorchBackendConfig(**config))
    outs = Runtime.get().load_program(program.buffer).load_method("forward").execute([x])
    with torch.no_grad():
        want = model(x)
    want = want if isinstance(want, tuple) else (want,)
    for got, ref in zip(outs, want, strict=True):
        scale = float(ref.abs().max())
        assert scale > 1e-3  # the output did not collapse
        assert float((got - ref).abs().max()) <= 1e-5 * scale
    return program


class ConvBn(torch.nn.Module):
    def __init__(self, dims: int, bias: bool, affine: bool, groups: int = 1) -> None:
        super().__init__()
        conv = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[dims]
        bn = {1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d, 3: torch.nn.BatchNorm3d}[dims]
        self.conv = conv(8, 16, 3, padding=1, bias=bias, groups=groups)
        self.bn = bn(16, affine=affine, eps=1e-3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


@pytest.mark.parametrize("dims,shape", [(1, (2, 8, 20)), (2, (2, 8, 12, 12)), (3, (1, 8, 6, 6, 6))])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("affine", [False, True])
def test_conv_batch_norm_pairs_are_folded(dims, shape, bias, affine) -> None:
    model = _randomize(ConvBn(dims, bias, affine))
    program = _check(model, torch.randn(*shape))
    assert _batch_norms(program) == 0
    assert sum("convolution" in t for t in _targets(program)) == 1


def test_grouped_and_depthwise_convolutions_are_folded() -> None:
    for groups in (2, 8):
        model = _randomize(ConvBn(2, True, True, groups=groups), seed=groups)
        assert _batch_norms(_check(model, torch.randn(2, 8, 10, 10))) == 0


def test_folding_can_be_switched_off() -> None:
    model = _randomize(ConvBn(2, True, True))
    program = _check(model, torch.randn(2, 8, 12, 12), fold_batch_norm=False)
    assert _batch_norms(program) == 1


class ConvReadTwice(torch.nn.Module):
    """The convolution's output is also read by something else: not folded."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.bn(y) + y


class TransposedConvBn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.ConvTranspose2d(4, 6, 3, stride=2)
        self.bn = torch.nn.BatchNorm2d(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x))


class BnWithoutConv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x * 2)


@pytest.mark.parametrize("model", [ConvReadTwice, TransposedConvBn, BnWithoutConv])
def test_pairs_that_are_not_the_same_program_are_left(model) -> None:
    program = _check(_randomize(model()), torch.randn(2, 4, 8, 8))
    assert _batch_norms(program) == 1


def test_the_zoo_cnns_run_without_batch_norm() -> None:
    from ember.testing.model_zoo import build

    for name in ("mobilenet_v2", "resnet18"):
        model, inputs = build(name, "small")
        program = to_edge(export(model, inputs)).to_executorch()
        assert _batch_norms(program) == 0, name
        (got,) = Runtime.get().load_program(program.buffer).load_method("forward").execute(
            list(inputs))
        with torch.no_grad():
            ref = model(*inputs)
        assert float((got - ref).abs().max()) <= 1e-4 * float(ref.abs().max()), name
