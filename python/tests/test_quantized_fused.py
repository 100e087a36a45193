"""The fused quantized ops (``ember_quantized::``) and the pass that makes them.

Kernels are compared with their eager reference (``torch.ops.ember_quantized``,
which computes what pt2e's dequantize → op → quantize chain computes) through
``_C.call_kernel``; whole programs with pt2e's converted models. The int8
kernels sum exactly in int32 while eager sums dequantized floats, so an output
may land one quantization step away where eager's float sum sits next to a
rounding tie: the tests allow one step and require almost every value to be
identical. The float output of ``linear_dynamic`` is compared relative to its
magnitude. ``make test`` runs this file again under EMBER_ISA=baseline (and
avx2 on AVX-512 hosts), so every microkernel the host has is checked.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
from ember import _C, exir
from ember.exir import ExecutorchBackendConfig
from ember.exir.operator import ember_quantized  # defines the reference ops
from ember.quantization import (
    XNNPACKQuantizer,
    convert_pt2e,
    get_symmetric_quantization_config,
    prepare_pt2e,
)
from ember.runtime import Runtime

eq = torch.ops.ember_quantized
RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _seed_per_test(request):
    """Each test draws from its own generator, seeded by its name, so its
    data do not depend on which tests ran before it in the worker (pytest -n)."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.name.encode()))


def int8(shape) -> np.ndarray:
    return RNG.integers(-128, 128, size=shape, dtype=np.int8)


def weights(shape) -> tuple[np.ndarray, np.ndarray]:
    w = RNG.integers(-127, 128, size=shape, dtype=np.int8)
    scales = RNG.uniform(0.002, 0.02, size=(shape[0],)).astype(np.float32)
    return w, scales


def spanning_scale(y: torch.Tensor) -> float:
    """An output scale that puts the float result across most of int8's range
    (a fixed one saturates wide sums to ±127, which would check little)."""
    peak = float(y.abs().max()) if y.numel() else 0.0
    return peak / 120 if peak > 0 else 1.0


def assert_steps(got: np.ndarray, want: np.ndarray, min_exact: float = 0.99) -> None:
    steps = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert steps.max(initial=0) <= 1, f"{int(steps.max())} steps away"
    if steps.size:
        exact = float((steps == 0).mean())
        assert exact >= min_exact, f"only {exact:.4f} of the values are identical"


# --- kernels against their eager reference ----------------------------------------------------

CONV_CASES = [
    # n, c, h, w, oc, kh, kw, stride, padding, dilation, groups
    (1, 3, 17, 19, 16, 3, 3, [1, 1], [1, 1], [1, 1], 1),
    (2, 8, 9, 9, 40, 1, 1, [1, 1], [0, 0], [1, 1], 1),      # pointwise, m not a tile multiple
    (1, 16, 12, 10, 24, 3, 3, [2, 2], [1, 1], [1, 1], 1),   # stride 2
    (1, 6, 11, 13, 9, 3, 2, [1, 2], [2, 0], [2, 1], 1),     # dilation, asymmetric everything
    (1, 12, 8, 8, 18, 3, 3, [2, 2], [1, 0], [1, 2], 3),     # grouped
    (2, 32, 10, 10, 32, 3, 3, [1, 1], [1, 1], [1, 1], 32),  # depthwise
    (1, 24, 9, 9, 24, 3, 3, [2, 2], [1, 1], [1, 1], 24),    # depthwise, stride 2
    # Two images of three blocks of 16 channels, stride 2 (qdepthwise_blocked.h).
    (2, 48, 14, 14, 48, 3, 3, [2, 2], [1, 1], [1, 1], 48),
    (1, 32, 7, 7, 32, 3, 3, [1, 1], [1, 1], [1, 1], 32),    # ... stride 1 on a 7×7 plane
    (1, 8, 7, 7, 16, 5, 5, [1, 1], [2, 2], [1, 1], 8),      # depthwise with a multiplier: GEMM
    (1, 130, 6, 6, 70, 3, 3, [1, 1], [1, 1], [1, 1], 1),    # k = 1170, n = 36
    (1, 4, 1, 1, 8, 1, 1, [1, 1], [0, 0], [1, 1], 1),       # one pixel
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("out_range", [(-128, 127), (-5, 127), (-20, 40)])
def test_conv2d_kernel_matches_reference(case, with_bias, out_range):
    n, c, h, w_, oc, kh, kw, stride, padding, dilation, groups = case
    x = int8((n, c, h, w_))
    w, scales = weights((oc, c // groups, kh, kw))
    bias = RNG.uniform(-2, 2, size=(oc,)).astype(np.float32) if with_bias else None
    s_x, z_x, z_y = 0.05, 3, -5
    x_f = (torch.from_numpy(x).float() - z_x) * s_x
    w_f = torch.from_numpy(w).float() * torch.from_numpy(scales).reshape(-1, 1, 1, 1)
    s_y = spanning_scale(torch.nn.functional.conv2d(
        x_f, w_f, None if bias is None else torch.from_numpy(bias), stride, padding, dilation,
        groups))
    args = [s_x, z_x]
    want = eq.conv2d(torch.from_numpy(x), s_x, z_x, torch.from_numpy(w), torch.from_numpy(scales),
                     None if bias is None else torch.from_numpy(bias), stride, padding, dilation,
                     groups, s_y, z_y, *out_range).numpy()
    out = np.zeros(want.shape, np.int8)
    _C.call_kernel("ember_quantized::conv2d.out",
                   [x, *args, w, scales, bias, stride, padding, dilation, groups, s_y, z_y,
                    *out_range, out], constants=[3, 4] + ([5] if with_bias else []), runs=2)
    assert_steps(out, want)
    assert out.min() >= out_range[0] and out.max() <= out_range[1]
    # A collapsed output would compare equal to anything: the values must spread
    # (before a narrow clamp range, which may hold most of 8 values at its floor).
    full = eq.conv2d(torch.from_numpy(x), s_x, z_x, torch.from_numpy(w), torch.from_numpy(scales),
                     None if bias is None else torch.from_numpy(bias), stride, padding, dilation,
                     groups, s_y, z_y, -128, 127).numpy()
    assert len(np.unique(full)) > min(8, full.size // 2)


LINEAR_CASES = [(1, 16, 8), (4, 37, 45), (3, 7, 64, 96), (2, 5, 256, 100), (128, 768, 64), (0, 8, 4)]


@pytest.mark.parametrize("shape", LINEAR_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_kernel_matches_reference(shape, with_bias):
    *lead, k, n_out = shape
    x = int8((*lead, k))
    w, scales = weights((n_out, k))
    bias = RNG.uniform(-2, 2, size=(n_out,)).astype(np.float32) if with_bias else None
    s_x, z_x, z_y = 0.03, -7, 2
    x_f = (torch.from_numpy(x).float() - z_x) * s_x
    w_f = torch.from_numpy(w).float() * torch.from_numpy(scales).reshape(-1, 1)
    s_y = spanning_scale(torch.nn.functional.linear(
        x_f, w_f, None if bias is None else torch.from_numpy(bias)))
    want = eq.linear(torch.from_numpy(x), s_x, z_x, torch.from_numpy(w), torch.from_numpy(scales),
                     None if bias is None else torch.from_numpy(bias), s_y, z_y, -128, 127).numpy()
    out = np.zeros(want.shape, np.int8)
    _C.call_kernel("ember_quantized::linear.out",
                   [x, s_x, z_x, w, scales, bias, s_y, z_y, -128, 127, out],
                   constants=[3, 4] + ([5] if with_bias else []), runs=2)
    assert_steps(out, want)
    assert want.size == 0 or len(np.unique(want)) > min(8, want.size // 2)


@pytest.mark.parametrize("shape", [(1, 16, 8), (4, 37, 45), (2, 9, 64, 96), (128, 768, 64)])
def test_linear_dynamic_kernel_matches_reference(shape):
    *lead, k, n_out = shape
    x = RNG.standard_normal((*lead, k)).astype(np.float32) * 3
    w, scales = weights((n_out, k))
    bias = RNG.uniform(-2, 2, size=(n_out,)).astype(np.float32)
    eps = float(torch.finfo(torch.float32).eps)
    want = eq.linear_dynamic(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(scales),
                             torch.from_numpy(bias), -128, 127, eps).numpy()
    out = np.zeros(want.shape, np.float32)
    _C.call_kernel("ember_quantized::linear_dynamic.out",
                   [x, w, scales, bias, -128, 127, eps, out], constants=[1, 2, 3], runs=2)
    scale = np.abs(want).max()
    assert scale > 0.1
    assert np.abs(out - want).max() <= 1e-5 * scale


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("shapes", [
    ((1, 64, 56, 56), (1, 64, 56, 56)), ((3, 5), (3, 5)), ((0, 4), (0, 4)),
    ((1000003,), (1000003,)), ((2, 23), (2, 23)),
    # Broadcasting: a squeeze-and-excitation gate, rows, a scalar, both sides,
    # a leading dim, and a large one (split over threads).
    ((2, 24, 7, 9), (2, 24, 1, 1)), ((2, 24, 1, 1), (2, 24, 7, 9)), ((5, 33), (33,)),
    ((5, 1), (1, 33)), ((4, 1, 6), (3, 1)), ((17,), ()), ((1, 96, 112, 112), (1, 96, 1, 1)),
])
@pytest.mark.parametrize("out_range", [(-128, 127), (-9, 127)])
# The second set makes every sum a multiple of 0.5 (and many products): half
# of them are ties, which must round to even as eager's quantize does.
@pytest.mark.parametrize("qargs", [(0.04, -3, 0.07, 12, 0.09, -9), (0.5, 1, 0.5, -2, 1.0, 3)])
def test_binary_kernels_are_bit_identical_to_reference(op, shapes, out_range, qargs):
    a, b = int8(shapes[0]), int8(shapes[1])
    args = (*qargs, *out_range)
    if op == "mul" and qargs[4] == 1.0:
        # Ties for a product: halves times halves are multiples of 0.25, so at
        # an output scale of 0.5 half of them sit between two steps; small
        # inputs keep the products inside int8's range.
        a = RNG.integers(-11, 12, size=shapes[0], dtype=np.int8)
        b = RNG.integers(-11, 12, size=shapes[1], dtype=np.int8)
        args = (*qargs[:4], 0.5, *args[5:])
    elif op == "mul":  # an output scale that spans the products' range
        ya = (a.astype(np.float32) - qargs[1]) * np.float32(qargs[0])
        yb = (b.astype(np.float32) - qargs[3]) * np.float32(qargs[2])
        args = (*qargs[:4], spanning_scale(torch.from_numpy(ya * yb)), *args[5:])
    want = getattr(eq, op)(torch.from_numpy(a), *args[:2], torch.from_numpy(b), *args[2:]).numpy()
    out = np.zeros(want.shape, np.int8)
    _C.call_kernel(f"ember_quantized::{op}.out", [a, *args[:2], b, *args[2:], out])
    np.testing.assert_array_equal(out, want)
    if want.size >= 1000:  # the comparison saw more than a saturated or constant result
        assert len(np.unique(want)) > 8


@pytest.mark.parametrize("op", ["add", "mul"])
def test_binary_kernels_read_strided_operands(op):
    """A transposed (non-contiguous) operand and a channels-last one."""
    a = torch.from_numpy(int8((6, 10))).t()
    b = torch.from_numpy(int8((10, 6)))
    args = (0.05, 2, 0.04, -1, 0.1 if op == "add" else 2.0, 0, -128, 127)
    want = getattr(eq, op)(a, *args[:2], b, *args[2:])
    out = torch.zeros(10, 6, dtype=torch.int8)
    _C.call_kernel(f"ember_quantized::{op}.out", [a, *args[:2], b, *args[2:], out])
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    a4 = torch.from_numpy(int8((2, 8, 5, 3))).contiguous(memory_format=torch.channels_last)
    b4 = torch.from_numpy(int8((2, 8, 1, 1)))
    want = getattr(eq, op)(a4, *args[:2], b4, *args[2:])
    out = torch.zeros(2, 8, 5, 3, dtype=torch.int8).contiguous(memory_format=torch.channels_last)
    _C.call_kernel(f"ember_quantized::{op}.out", [a4, *args[:2], b4, *args[2:], out])
    torch.testing.assert_close(out, want, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["add", "mul"])
def test_binary_kernels_refuse_what_they_cannot_run(op):
    with pytest.raises(Exception, match=r"a of shape \[2, 3\] and b of shape \[4\] do not broadcast"):
        _C.call_kernel(f"ember_quantized::{op}.out",
                       [int8((2, 3)), 0.1, 0, int8((4,)), 0.1, 0, 0.1, 0, -128, 127,
                        np.zeros((2, 3), np.int8)])
    with pytest.raises(Exception, match="int8"):
        _C.call_kernel(f"ember_quantized::{op}.out",
                       [int8((2, 3)), 0.1, 0, np.zeros((2, 3), np.float32), 0.1, 0, 0.1, 0,
                        -128, 127, np.zeros((2, 3), np.int8)])


def test_conv2d_refuses_a_weight_that_is_not_a_constant():
    w, scales = weights((4, 3, 3, 3))
    with pytest.raises(Exception, match="weight must be a contiguous constant"):
        _C.call_kernel("ember_quantized::conv2d.out",
                       [int8((1, 3, 5, 5)), 0.1, 0, w, scales, None, [1, 1], [1, 1], [1, 1], 1,
                        0.1, 0, -128, 127, np.zeros((1, 4, 5, 5), np.int8)], constants=[4])


def test_prepare_refuses_bad_quantization_parameters():
    w, scales = weights((4, 8))
    bad_scales = scales.copy()
    bad_scales[2] = -1.0
    with pytest.raises(Exception, match=r"weight_scales\[2\] = -1 must be finite and > 0"):
        _C.call_kernel("ember_quantized::linear.out",
                       [int8((2, 8)), 0.1, 0, w, bad_scales, None, 0.1, 0, -128, 127,
                        np.zeros((2, 4), np.int8)], constants=[3, 4])
    with pytest.raises(Exception, match="zero points 200 and 0 must lie in int8's range"):
        _C.call_kernel("ember_quantized::linear.out",
                       [int8((2, 8)), 0.1, 200, w, scales, None, 0.1, 0, -128, 127,
                        np.zeros((2, 4), np.int8)], constants=[3, 4])
    with pytest.raises(Exception, match=r"\[output_min, output_max\] = \[10, 5\]"):
        _C.call_kernel("ember_quantized::linear.out",
                       [int8((2, 8)), 0.1, 0, w, scales, None, 0.1, 0, 10, 5,
                        np.zeros((2, 4), np.int8)], constants=[3, 4])


def test_linear_refuses_an_input_of_the_wrong_width():
    w, scales = weights((4, 8))
    with pytest.raises(Exception, match="last dimension must be the weight's 8 input features"):
        _C.call_kernel("ember_quantized::linear.out",
                       [int8((2, 7)), 0.1, 0, w, scales, None, 0.1, 0, -128, 127,
                        np.zeros((2, 4), np.int8)], constants=[3, 4])


# --- whole programs from pt2e ---------------------------------------------------------------------


class ConvNet(torch.nn.Module):
    """conv+relu, depthwise+relu6, pointwise, a residual add+relu, pooling, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 24, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.pw = torch.nn.Conv2d(24, 24, 1)
        self.c2 = torch.nn.Conv2d(24, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        z = torch.nn.functional.relu6(self.dw(y))
        y = torch.relu(self.pw(z) + y)
        y = torch.nn.functional.max_pool2d(torch.relu(self.c2(y)), 2)
        return self.fc(y.mean((2, 3)))


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(48, 96)
        self.b = torch.nn.Linear(96, 48, bias=False)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class TfPadNet(torch.nn.Module):
    """TF-style explicit padding: asymmetric before a stride-2 convolution,
    symmetric before a depthwise one, then max pooling."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, stride=2)
        self.dw = torch.nn.Conv2d(16, 16, 3, groups=16)
        self.pw = torch.nn.Conv2d(16, 8, 1)

    def forward(self, x):
        y = torch.relu(self.c1(torch.nn.functional.pad(x, (0, 1, 0, 1))))
        y = torch.nn.functional.relu6(self.dw(torch.nn.functional.pad(y, (1, 1, 1, 1))))
        return torch.nn.functional.max_pool2d(self.pw(y), 2)


def test_max_pool_runs_on_int8_and_keeps_the_values():
    """max pooling commutes with dequantize: the fused program pools the int8
    tensor (no dequantize before the pool); with padding, stride 1 and 2 and
    a window past the edge it stays within a step of the unfused program
    (whose float convolutions may round a tie the other way)."""
    torch.manual_seed(0)

    class PoolNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.c2 = torch.nn.Conv2d(16, 8, 1)

        def forward(self, x):
            y = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 3, 2, 1)
            y = torch.nn.functional.max_pool2d(self.c2(y), 3, 1, 1)
            return torch.nn.functional.max_pool2d(y, 2, ceil_mode=True)

    example = (torch.randn(2, 3, 71, 69),)
    converted = quantize(PoolNet().eval(), example)
    fused = lower(converted, example)
    gm = fused.exported_program().graph_module
    # Nothing reads the indices: ember_fused::max_pool2d (values only).
    pools = [n for n in gm.graph.nodes if "max_pool2d" in str(n.target)]
    assert len(pools) == 3 and all("ember_fused" in str(n.target) for n in pools)
    assert all(n.args[0].meta["val"].dtype == torch.int8 for n in pools)
    unfused = lower(converted, example, fuse=False)
    x = torch.randn(*example[0].shape)
    got, want = run(fused, [x]).numpy(), run(unfused, [x]).numpy()
    steps = np.abs(got - want) / output_step(converted)
    assert steps.max() <= 1.01 and (steps < 0.5).mean() >= 0.99


@pytest.mark.parametrize("geometry", [((3, 3), (2, 2), (1, 1), False),
                                      ((3, 3), (1, 1), (1, 1), False),
                                      ((2, 2), (2, 2), (0, 0), True),
                                      ((3, 2), (2, 1), (1, 0), False)])
def test_int8_max_pool_kernel_matches_eager(geometry):
    """The int8 row path of aten::max_pool2d_with_indices: values and the
    first maximum's index, as eager's float max pool gives them (int8 has
    many ties)."""
    kernel, stride, padding, ceil = geometry
    x = int8((2, 5, 37, 70))
    want, want_ix = torch.nn.functional.max_pool2d(torch.from_numpy(x).float(), kernel, stride,
                                                   padding, ceil_mode=ceil, return_indices=True)
    out = np.zeros(want.shape, np.int8)
    ix = np.zeros(want.shape, np.int64)
    _C.call_kernel("aten::max_pool2d_with_indices.out",
                   [x, list(kernel), list(stride), list(padding), [1, 1], ceil, out, ix],
                   returns=[6, 7])
    np.testing.assert_array_equal(out, want.numpy().astype(np.int8))
    np.testing.assert_array_equal(ix, want_ix.numpy())


def quantize(model, example, dynamic=False, per_channel=True, batches=8):
    graph = torch.export.export(model, example).module()
    config = get_symmetric_quantization_config(is_per_channel=per_channel, is_dynamic=dynamic)
    prepared = prepare_pt2e(graph, XNNPACKQuantizer().set_global(config))
    gen = torch.Generator().manual_seed(3)
    for _ in range(batches):
        prepared(*[torch.randn(x.shape, generator=gen) for x in example])
    return convert_pt2e(prepared)


def lower(converted, example, fuse=True):
    edge = exir.to_edge(torch.export.export(converted, example))
    return edge.to_executorch(ExecutorchBackendConfig(fuse_quantized_ops=fuse))


def ops_of(program) -> list[str]:
    gm = program.exported_program().graph_module
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def run(program, inputs):
    method = Runtime.get().load_program(bytes(program.buffer)).load_method("forward")
    return method.execute(list(inputs))[0]


def output_step(converted) -> float:
    last = [n for n in converted.graph.nodes if "dequantize_per_tensor" in str(n.target)][-1]
    return float(last.args[1])


@pytest.mark.parametrize("per_channel", [True, False])
def test_conv_net_runs_fused_and_matches_eager_converted(per_channel):
    torch.manual_seed(0)
    model = ConvNet().eval()
    example = (torch.randn(2, 3, 32, 30),)
    converted = quantize(model, example, per_channel=per_channel)
    program = lower(converted, example)
    ops = ops_of(program)
    assert sum("ember_quantized.conv2d" in o for o in ops) == 4
    assert any("ember_quantized.add" in o for o in ops)
    assert any("ember_quantized.linear" in o for o in ops)
    assert not any("dequantize_per_channel" in o for o in ops), "weights stay int8, unfused"
    # relu6 after the depthwise convolution (its own dequantize → hardtanh → quantize
    # with the same parameters) became that convolution's output range.
    assert not any("hardtanh" in o for o in ops)
    step = output_step(converted)
    x = torch.randn(8, 3, 32, 30, generator=torch.Generator().manual_seed(11))
    got = torch.cat([run(program, (xi,)) for xi in x.split(2)])
    want = torch.cat([converted(xi) for xi in x.split(2)])  # exported for batch 2
    steps = ((got - want).abs() / step).round()
    assert steps.max().item() <= 1
    assert (steps == 0).float().mean().item() >= 0.99
    # Agreement with the float model it came from.
    with torch.no_grad():
        fp32 = model(x)
    assert (got.argmax(1) == fp32.argmax(1)).float().mean().item() >= 0.75
    assert (got - fp32).abs().max().item() < 0.3 * fp32.abs().max().item()


class SeCatNet(torch.nn.Module):
    """Two branches concatenated, then a squeeze-and-excitation gate (mean,
    two 1×1 convolutions, sigmoid) multiplied in over H and W."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.squeeze = torch.nn.Conv2d(32, 8, 1)
        self.excite = torch.nn.Conv2d(8, 32, 1)
        self.out = torch.nn.Conv2d(32, 8, 1)

    def forward(self, x):
        y = torch.cat([torch.relu(self.a(x)), torch.relu(self.b(x))], 1)
        gate = torch.sigmoid(self.excite(torch.relu(self.squeeze(y.mean((2, 3), keepdim=True)))))
        return self.out(y * gate)


def test_concatenation_and_gating_run_on_int8():
    torch.manual_seed(4)
    model = SeCatNet().eval()
    example = (torch.randn(1, 3, 20, 18),)
    converted = quantize(model, example)
    program = lower(converted, example)
    gm = program.exported_program().graph_module
    (cat,) = [n for n in gm.graph.nodes if "aten.cat" in str(n.target)]
    assert all(a.meta["val"].dtype == torch.int8 for a in cat.args[0]), "cat reads the int8 tensors"
    ops = ops_of(program)
    assert sum("ember_quantized.mul" in o for o in ops) == 1
    x = torch.randn(1, 3, 20, 18, generator=torch.Generator().manual_seed(5))
    steps = ((run(program, (x,)) - converted(x)).abs() / output_step(converted)).round()
    assert steps.max().item() <= 1
    assert (steps == 0).float().mean().item() >= 0.99


@pytest.mark.parametrize("net", [ConvNet, SeCatNet])
def test_xnnpack_partitioner_leaves_quantized_chains_to_the_integer_kernels(net):
    """The usual flow (XNNPACKQuantizer, then XnnpackPartitioner): claiming
    the float ops between pt2e's dequantize and quantize would leave them
    unfusable (float convolutions on weights dequantized every run), so the
    partitioner refuses them and the program is the one without it."""
    from ember.backends.xnnpack import XnnpackPartitioner
    from ember.backends.xnnpack.partitioner import QUANTIZED_CHAIN

    torch.manual_seed(6)
    example = (torch.randn(1, 3, 20, 18),)
    converted = quantize(net().eval(), example)
    partitioner = XnnpackPartitioner()
    edge = exir.to_edge(torch.export.export(converted, example)).to_backend(partitioner)
    with_partitioner = ops_of(edge.to_executorch())
    assert with_partitioner == ops_of(lower(converted, example))
    assert not any("delegate" in o or "aten.convolution" in o for o in with_partitioner)
    refused = {op for _, op, why in partitioner.report() if why == QUANTIZED_CHAIN}
    assert "aten.convolution.default" in refused


def test_xnnpack_partitioner_leaves_dynamic_linear_layers_to_the_integer_kernels():
    from ember.backends.xnnpack import XnnpackPartitioner

    example = (torch.randn(6, 48),)
    converted = quantize(Mlp().eval(), example, dynamic=True)
    edge = exir.to_edge(torch.export.export(converted, example)).to_backend(XnnpackPartitioner())
    ops = ops_of(edge.to_executorch())
    assert sum("ember_quantized.linear_dynamic" in o for o in ops) == 2
    # Only the relu between them, a float op outside both chains, may be delegated.
    assert not any("addmm" in o or "aten.mm" in o or "dequantize" in o for o in ops)


def test_explicit_padding_folds_into_int8_convolutions():
    torch.manual_seed(2)
    model = TfPadNet().eval()
    example = (torch.randn(1, 3, 33, 31),)
    converted = quantize(model, example)
    program = lower(converted, example)
    ops = ops_of(program)
    assert not any("constant_pad_nd" in o for o in ops), "padding folded into the convolutions"
    # Only the input's: the max pool runs on int8.
    assert sum(o.startswith("quantized_decomposed.quantize_per_tensor") for o in ops) == 1
    x = torch.randn(1, 3, 33, 31)
    steps = ((run(program, (x,)) - converted(x)).abs() / output_step(converted)).round()
    assert steps.max().item() <= 1
    assert (steps == 0).float().mean().item() >= 0.99


def test_fusion_can_be_turned_off():
    example = (torch.randn(1, 3, 16, 16),)
    converted = quantize(ConvNet().eval(), example)
    ops = ops_of(lower(converted, example, fuse=False))
    assert not any("ember_quantized" in o for o in ops)
    assert any("dequantize_per_channel" in o for o in ops)


@pytest.mark.parametrize("lead", [(5,), (2, 7)])
def test_mlp_static_and_dynamic(lead):
    torch.manual_seed(1)
    model = Mlp().eval()
    example = (torch.randn(*lead, 48),)
    static = quantize(model, example)
    program = lower(static, example)
    assert sum("ember_quantized.linear.out" in o for o in ops_of(program)) == 2
    x = torch.randn(*lead, 48)
    steps = ((run(program, (x,)) - static(x)).abs() / output_step(static)).round()
    assert steps.max().item() <= 1

    dynamic = quantize(model, example, dynamic=True)
    program = lower(dynamic, example)
    assert sum("ember_quantized.linear_dynamic" in o for o in ops_of(program)) == 2
    got, want = run(program, (x,)), dynamic(x)
    assert (got - want).abs().max().item() <= 1e-4 * want.abs().max().item()


# --- weight-only linear (torchao flows) --------------------------------------------------------


@pytest.mark.parametrize("rows", [1, 3, 9, 64])
@pytest.mark.parametrize(("k", "group"), [(64, 64), (96, 32), (40, 8)])
@pytest.mark.parametrize("with_zeros", [True, False])
@pytest.mark.parametrize("two_per_byte", [False, True])
def test_linear_weight_only_kernel_matches_reference(rows, k, group, with_zeros, two_per_byte):
    n = 37
    x = RNG.standard_normal((rows, k)).astype(np.float32)
    w = RNG.integers(-8, 8, size=(n, k), dtype=np.int8)
    if two_per_byte:  # the program's int4 layout (uint8 [N, K / 2]); the reference unpacks it
        w = ember_quantized.pack_int4(torch.from_numpy(w)).numpy()
        assert w.dtype == np.uint8 and w.shape == (n, k // 2)
    scales = RNG.uniform(0.01, 0.1, size=(n, k // group)).astype(np.float32)
    zeros = RNG.integers(-2, 3, size=(n, k // group)).astype(np.float32) if with_zeros else None
    bias = RNG.standard_normal(n).astype(np.float32)
    want = eq.linear_weight_only(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(scales),
                                 None if zeros is None else torch.from_numpy(zeros), group,
                                 torch.from_numpy(bias)).numpy()
    out = np.zeros((rows, n), np.float32)
    _C.call_kernel("ember_quantized::linear_weight_only.out",
                   [x, w, scales, zeros, group, bias, out],
                   constants=[1, 2, 5] + ([3] if with_zeros else []), runs=2)
    scale = np.abs(want).max()
    assert scale > 0.1
    assert np.abs(out - want).max() <= 2e-6 * scale * np.sqrt(k)


def test_linear_weight_only_refuses_a_group_that_does_not_divide():
    with pytest.raises(Exception, match="group_size 5 must be >= 1 and divide the 64"):
        _C.call_kernel("ember_quantized::linear_weight_only.out",
                       [RNG.standard_normal((1, 64)).astype(np.float32), int8((4, 64)),
                        np.ones((4, 12), np.float32), None, 5, None, np.zeros((1, 4), np.float32)],
                       constants=[1, 2])


def _torchao_configs():
    from torchao.quantization import Int8WeightOnlyConfig, IntxWeightOnlyConfig
    from torchao.quantization.granularity import PerGroup

    return {"int8 per channel": Int8WeightOnlyConfig(),
            "int4 groups of 32": IntxWeightOnlyConfig(weight_dtype=torch.int4,
                                                      granularity=PerGroup(32))}


@pytest.mark.parametrize("flow", ["int8 per channel", "int4 groups of 32"])
def test_torchao_weight_only_flows_run_fused(flow):
    from torchao.quantization import quantize_

    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.SiLU(),
                                torch.nn.Linear(128, 64)).eval()
    fp32_size = len(exir.to_edge(torch.export.export(model, (torch.randn(1, 64),)))
                    .to_executorch().buffer)
    quantize_(model, _torchao_configs()[flow])
    for shape in [(1, 64), (2, 5, 64)]:  # decoding one token; a prompt of five
        x = torch.randn(*shape)
        program = exir.to_edge(torch.export.export(model, (x,))).to_executorch()
        assert sum("linear_weight_only" in o for o in ops_of(program)) == 2
        got, want = run(program, (x,)), model(x)
        assert (got - want).abs().max().item() <= 1e-5 * want.abs().max().item()
    # int8 weights: a quarter of the float32 bytes; int4 ones two per byte, an eighth (with
    # one float32 scale per group of 32, and no zero points: torchao's are all 0).
    assert len(program.buffer) < (0.4 if flow == "int8 per channel" else 0.25) * fp32_size
