"""Ember's opt-in bf16 precision (``ExecutorchBackendConfig(precision="bf16")``,
passes/bf16_precision.py, kernels/portable/op_linear_bf16.cpp and the bf16
weight of ember_fused::fused_convolution): which linear layers and
convolutions convert, the kernels against a float64 product of the
bf16-rounded operands (what the ops mean: only float32 sums round), and the
error of the bf16 program against the float32 model, relative to the output's
magnitude. ``make test`` runs this file again under
EMBER_ISA=baseline and =avx2, so every microkernel the host has is checked."""

from __future__ import annotations

import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

pytest.importorskip("ember._C")
from ember.exir.operator import ember_fused
from ember.runtime import Runtime


def _program(model: torch.nn.Module, inputs: tuple, **config):
    return to_edge(export(model, inputs)).to_executorch(ExecutorchBackendConfig(**config))


def _run(program, inputs: tuple) -> list[torch.Tensor]:
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    return method.execute(list(inputs))


def _count(program, name: str) -> int:
    ep = program.exported_program()
    return sum(name in str(n.target) for n in ep.graph.nodes if n.op == "call_function")


def _rounded_reference(x: torch.Tensor, linear: torch.nn.Linear):
    """The product of the bf16-rounded operands in float64, and the sum of the
    products' magnitudes (the scale of float32 summation error)."""
    xr = x.to(torch.bfloat16).double()
    wr = linear.weight.detach().to(torch.bfloat16).double()
    y = xr @ wr.T
    mag = xr.abs() @ wr.abs().T
    if linear.bias is not None:
        y = y + linear.bias.detach().double()
    return y, mag


class Linear(torch.nn.Module):
    def __init__(self, k: int, n: int, bias: bool = True) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(k, n, bias=bias)

    def forward(self, x):
        return self.fc(x)


# (input shape, out features, bias): partial tiles in both directions, k odd
# and over one k-block (256), more rows than one row block (144), 1-D and 3-D inputs.
SHAPES = [
    ((1, 8), 8, True),
    ((5, 3), 17, True),
    ((16, 256), 64, False),
    ((150, 257), 70, True),
    ((33, 520), 96, True),
    ((2, 7, 300), 45, True),
    ((300,), 33, True),
]


@pytest.mark.parametrize("shape,n,bias", SHAPES)
def test_kernel_matches_the_rounded_product(shape, n, bias):
    torch.manual_seed(sum(shape) + n)
    model = Linear(shape[-1], n, bias).eval()
    x = torch.randn(shape)
    program = _program(model, (x,), precision="bf16")
    assert _count(program, "linear_bf16") == 1
    (got,) = _run(program, (x,))
    want, mag = _rounded_reference(x, model.fc)
    assert got.shape == want.shape and got.dtype == torch.float32
    err = (got.double() - want).abs()
    bound = 1e-5 * (mag + 1.0)
    assert bool((err <= bound).all()), f"max error over bound {float((err / bound).max())}"


def test_eager_reference_is_the_rounded_product():
    torch.manual_seed(0)
    model = Linear(40, 24).eval()
    x = torch.randn(6, 40)
    got = ember_fused.ops.linear_bf16(x, model.fc.weight.detach().to(torch.bfloat16),
                                      model.fc.bias.detach())
    want, mag = _rounded_reference(x, model.fc)
    assert bool(((got.double() - want).abs() <= 1e-5 * (mag + 1.0)).all())


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(256, 1024)
        self.down = torch.nn.Linear(1024, 256)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


def test_error_against_float32_is_stated():
    """A transformer MLP block: bf16 against the float32 model, relative to
    the output's magnitude (docs/bf16.md quotes this bound)."""
    torch.manual_seed(1)
    model = Mlp().eval()
    x = torch.randn(64, 256)
    with torch.no_grad():
        want = model(x)
    fp32 = _program(model, (x,))
    bf16 = _program(model, (x,), precision="bf16")
    assert _count(bf16, "linear_bf16") == 2 and _count(fp32, "linear_bf16") == 0
    # GELU and the residual add are the linear layers' epilogue, as in float32.
    assert _count(bf16, "gelu") == 0 and _count(bf16, "aten.add") == 0
    (got32,) = _run(fp32, (x,))
    (got16,) = _run(bf16, (x,))
    scale = float(want.abs().max())
    assert scale > 1.0
    assert float((got32 - want).abs().max()) <= 1e-5 * scale
    rel = float((got16 - want).abs().max()) / scale
    assert 1e-5 < rel <= 1e-2, f"bf16 error {rel} of the output's magnitude"
    # The weights are stored in half the bytes.
    assert len(bf16.buffer) < 0.6 * len(fp32.buffer)


class LinearEpilogue(torch.nn.Module):
    def __init__(self, activation: str) -> None:
        super().__init__()
        self.fc, self.activation = torch.nn.Linear(96, 70), activation

    def forward(self, x, r):
        y = self.fc(x) + r
        if self.activation == "gelu":
            return torch.nn.functional.gelu(y)
        if self.activation == "gelu_tanh":
            return torch.nn.functional.gelu(y, approximate="tanh")
        return torch.nn.functional.hardtanh(y, -0.5, 1.5)


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "clamp"])
def test_epilogue_matches_the_rounded_product(activation):
    """A linear layer, a residual add and an activation become one
    fused_linear_bf16 whose epilogue (the residual per tile, the activation per
    row block) matches the float64 rounded product followed by the same ops,
    within the bf16 kernels' bound carried through the activation (slope at
    most 1.13), on rows that split over AMX tiles and a partial strip."""
    torch.manual_seed(7)
    model = LinearEpilogue(activation).eval()
    x, r = torch.randn(3, 37, 96), torch.randn(3, 37, 70)
    program = _program(model, (x, r), precision="bf16")
    assert _count(program, "fused_linear_bf16") == 1
    assert _count(program, "gelu") == 0 and _count(program, "hardtanh") == 0
    assert _count(program, "aten.add") == 0
    (got,) = _run(program, (x, r))
    want, mag = _rounded_reference(x.reshape(-1, 96), model.fc)
    y = want.reshape(3, 37, 70) + r.double()
    if activation == "clamp":
        y = y.clamp(-0.5, 1.5)
    else:
        approximate = "tanh" if activation == "gelu_tanh" else "none"
        y = torch.nn.functional.gelu(y, approximate=approximate)
    bound = 1.2 * 1e-5 * (mag.reshape(3, 37, 70) + 1.0) + 2e-6 * y.abs()
    err = (got.double() - y).abs()
    assert bool((err <= bound).all()), f"max error over bound {float((err / bound).max())}"
    assert float(got.std()) > 0.1


class NotConverted(torch.nn.Module):
    def forward(self, x, w):
        return (x @ w, torch.addmm(torch.zeros(3), x, w, beta=0.5))


def test_only_constant_weights_with_plain_addmm_convert():
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    program = _program(NotConverted(), (x, w), precision="bf16")
    assert _count(program, "linear_bf16") == 0
    got = _run(program, (x, w))
    want = NotConverted()(x, w)
    for g, e in zip(got, want, strict=True):
        assert torch.allclose(g, e, rtol=1e-5, atol=1e-5)


def test_default_is_float32_and_unknown_precision_is_refused():
    assert ExecutorchBackendConfig().precision == "fp32"
    with pytest.raises(ValueError, match="precision='fp16'"):
        ExecutorchBackendConfig(precision="fp16")


def _conv_reference(x, conv: torch.nn.Module, residual=None, lo=None, hi=None):
    """The convolution of the bf16-rounded operands in float64, and of their
    magnitudes (the scale of float32 summation error)."""
    xr = x.to(torch.bfloat16).double()
    wr = conv.weight.detach().to(torch.bfloat16).double()
    f = torch.nn.functional.conv2d if wr.dim() == 4 else torch.nn.functional.conv1d
    kw = {"stride": conv.stride, "padding": conv.padding, "dilation": conv.dilation,
          "groups": conv.groups}
    y = f(xr, wr, None, **kw)
    mag = f(xr.abs(), wr.abs(), None, **kw)
    if conv.bias is not None:
        y = y + conv.bias.detach().double().reshape(-1, *([1] * (wr.dim() - 2)))
    if residual is not None:
        y = y + residual.double()
    if lo is not None or hi is not None:
        y = y.clamp(lo, hi)
    return y, mag


class ConvBlock(torch.nn.Module):
    def __init__(self, conv: torch.nn.Module, residual: bool, relu: bool) -> None:
        super().__init__()
        self.conv, self.residual, self.relu = conv, residual, relu

    def forward(self, x, r):
        y = self.conv(x)
        if self.residual:
            y = y + r
        return torch.relu(y) if self.relu else y


# (conv, input shape): 1×1 (pointwise GEMM), strided and padded im2col, grouped,
# 1-D, channels crossing a tile, k over one block.
CONVS = [
    (lambda: torch.nn.Conv2d(64, 48, 1), (1, 64, 9, 11)),
    # Input channels in whole 32s: AMX hosts run these on the tiles as an
    # implicit GEMM (conv_bf16_amx.h): 3×3 stride 1 and 2, 5×5 dilated, three
    # channel groups, more than 32 output channels, a plane wider than a block.
    (lambda: torch.nn.Conv2d(64, 48, 3, padding=1), (1, 64, 10, 9)),
    (lambda: torch.nn.Conv2d(32, 40, 3, stride=2, padding=1), (2, 32, 13, 12)),
    (lambda: torch.nn.Conv2d(96, 70, 5, padding=4, dilation=2), (1, 96, 11, 14)),
    (lambda: torch.nn.Conv2d(32, 33, 3, padding=1, bias=False), (1, 32, 20, 29)),
    (lambda: torch.nn.Conv2d(16, 40, 3, stride=2, padding=1), (2, 16, 13, 12)),
    (lambda: torch.nn.Conv2d(3, 24, 7, stride=2, padding=3, bias=False), (1, 3, 30, 30)),
    (lambda: torch.nn.Conv2d(32, 64, 3, stride=1, padding=1, groups=4), (1, 32, 10, 10)),
    (lambda: torch.nn.Conv1d(24, 33, 5, padding=2, dilation=2), (2, 24, 40)),
    (lambda: torch.nn.Conv2d(300, 70, 1, stride=2), (1, 300, 8, 8)),
]


@pytest.mark.parametrize("residual,relu", [(False, False), (True, True)])
@pytest.mark.parametrize("case", range(len(CONVS)))
def test_convolution_matches_the_rounded_product(case, residual, relu):
    make, shape = CONVS[case]
    torch.manual_seed(case)
    conv = make().eval()
    x = torch.randn(shape)
    r = torch.randn(conv(x).shape)
    model = ConvBlock(conv, residual, relu).eval()
    program = _program(model, (x, r), precision="bf16")
    ep = program.exported_program()
    weights = [n for n in ep.graph.nodes if n.op == "call_function"
               and "fused_convolution" in str(n.target)]
    assert len(weights) == 1 and weights[0].args[1].meta["val"].dtype == torch.bfloat16
    (got,) = _run(program, (x, r))
    want, mag = _conv_reference(x, conv, r if residual else None, 0.0 if relu else None)
    err = (got.double() - want).abs()
    bound = 1e-5 * (mag + 1.0)
    assert bool((err <= bound).all()), f"max error over bound {float((err / bound).max())}"


class Winograd(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv3 = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.dw = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.pw = torch.nn.Conv2d(32, 16, 1)

    def forward(self, x):
        return self.pw(self.dw(self.conv3(x)))


@pytest.mark.parametrize("side,converted", [(32, 2), (8, 2)])
def test_depthwise_convolutions_stay_float32(side, converted):
    """The 3×3 and 1×1 convolutions convert on any plane (on a 32×32 one, off
    AMX, the kernel widens the 3×3 weight back for float32 Winograd at load);
    the depthwise one never converts. Both run within bf16's error."""
    torch.manual_seed(3)
    model = Winograd().eval()
    x = torch.randn(1, 32, side, side)
    program = _program(model, (x,), precision="bf16")
    ep = program.exported_program()
    convs = [n for n in ep.graph.nodes if n.op == "call_function" and "conv" in str(n.target)]
    dtypes = [n.args[1].meta["val"].dtype for n in convs]
    assert dtypes.count(torch.bfloat16) == converted and len(dtypes) == 3
    (got,) = _run(program, (x,))
    with torch.no_grad():
        want = model(x)
    scale = float(want.abs().max())
    assert scale > 0.1
    assert float((got - want).abs().max()) <= 1e-2 * scale


def test_large_3x3_planes_off_the_tiles_run_winograd_on_the_widened_weight():
    """16 input channels (never the AMX tiles) on a 32×32 plane: the bf16
    weight is widened back to float32 at load and runs Winograd, so the
    activations are not rounded: the result is the product of the bf16
    weight with the float32 input, within Winograd's error (relative to the
    output's magnitude), and farther from the fully rounded product."""
    torch.manual_seed(5)
    conv = torch.nn.Conv2d(16, 24, 3, padding=1).eval()
    x = torch.randn(1, 16, 32, 32)
    program = _program(conv, (x,), precision="bf16")
    ep = program.exported_program()
    convs = [n for n in ep.graph.nodes if n.op == "call_function" and "conv" in str(n.target)]
    assert [n.args[1].meta["val"].dtype for n in convs] == [torch.bfloat16]
    (got,) = _run(program, (x,))
    wr = conv.weight.detach().to(torch.bfloat16).double()
    want = torch.nn.functional.conv2d(x.double(), wr, conv.bias.detach().double(), padding=1)
    scale = float(want.abs().max())
    err = float((got.double() - want).abs().max())
    assert err <= 1e-4 * scale, f"error {err / scale:.2e} of the output's magnitude"
    rounded, _ = _conv_reference(x, conv)
    assert float((got.double() - rounded).abs().max()) > 10 * err


class WeightAsInput(torch.nn.Module):
    def forward(self, x, w):
        return ember_fused.ops.linear_bf16(x, w, None)


def test_a_weight_that_is_not_a_constant_is_refused_at_load():
    x, w = torch.randn(4, 8), torch.randn(3, 8).to(torch.bfloat16)
    program = _program(WeightAsInput(), (x, w))
    loaded = Runtime.get().load_program(program.buffer)
    with pytest.raises(Exception, match="weight: must be a constant"):
        loaded.load_method("forward")
