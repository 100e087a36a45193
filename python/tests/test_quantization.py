"""Issue 6: the tutorial's pt2e quantization with Ember's XNNPACKQuantizer,
lowered with to_edge / to_executorch and run in the C++ runtime.

* the quantized_decomposed kernels against PyTorch eager, through call_kernel;
* the tutorial's SimpleConv and a small CNN trained here for a few seconds on
  a synthetic task, calibrated with real data: the runtime's output matches
  the eager converted model within one quantization step of the output, and
  fp32 vs int8 agreement is measured (numbers in docs/quantization.md);
* a model with an op the quantizer does not annotate keeps it in float;
* invalid quantization parameters in a program are refused by load_method.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")
_C = pytest.importorskip("ember._C")

import torch.nn.functional as F  # noqa: E402
from ember import exir  # noqa: E402
from ember.quantization import (  # noqa: E402
    XNNPACKQuantizer,
    convert_pt2e,
    get_symmetric_quantization_config,
    prepare_pt2e,
)
from ember.runtime import Runtime  # noqa: E402
from models import SimpleConv  # noqa: E402

qd = torch.ops.quantized_decomposed
RNG = np.random.default_rng(0)
DTYPE_NUMBER = {np.uint8: 0, np.int8: 1, np.int16: 2, np.int32: 3, np.float32: 6, np.float64: 7}
TORCH_DTYPE = {np.uint8: torch.uint8, np.int8: torch.int8, np.int16: torch.int16,
               np.int32: torch.int32, np.float32: torch.float32, np.float64: torch.float64}
RANGE = {np.uint8: (0, 255), np.int8: (-128, 127), np.int16: (-32768, 32767),
         np.int32: (-(2**31), 2**31 - 1)}


def dt(np_dtype) -> tuple[str, int]:
    return ("dtype", DTYPE_NUMBER[np_dtype])


def float_input(shape, scale: float) -> np.ndarray:
    """Normal values plus exact ties (k + 0.5) * scale, which rounding must send to even."""
    x = RNG.standard_normal(shape).astype(np.float32) * 40 * scale
    flat = x.reshape(-1)
    flat[::3] = (RNG.integers(-60, 60, size=flat[::3].shape) + 0.5) * scale
    return x


def channels_last(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


# --- kernels vs eager --------------------------------------------------------


@pytest.mark.parametrize("qdtype", [np.int8, np.uint8, np.int16, np.int32])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "empty"])
def test_quantize_dequantize_per_tensor(qdtype, layout) -> None:
    lo, hi = RANGE[qdtype]
    scale, zp = 0.0371, (lo + hi) // 2 + 3 if qdtype == np.uint8 else -5
    shape = (0, 3, 4, 5) if layout == "empty" else (2, 3, 4, 5)
    x = float_input(shape, scale)
    if layout == "channels_last":
        x = channels_last(x)
    want = qd.quantize_per_tensor(torch.from_numpy(np.array(x)), scale, zp, lo, hi,
                                  TORCH_DTYPE[qdtype])
    out = np.empty(shape, dtype=qdtype)
    _C.call_kernel("quantized_decomposed::quantize_per_tensor.out",
                   [x, scale, zp, lo, hi, dt(qdtype), out])
    np.testing.assert_array_equal(out, want.numpy())
    # The .tensor overload reads the same parameters from one-element tensors.
    out_t = np.empty(shape, dtype=qdtype)
    _C.call_kernel("quantized_decomposed::quantize_per_tensor.tensor_out",
                   [x, np.array([scale]), np.array([zp]), lo, hi, dt(qdtype), out_t])
    np.testing.assert_array_equal(out_t, want.numpy())

    q = want.numpy()
    for out_dtype in (None, np.float64):
        kw = {} if out_dtype is None else {"out_dtype": TORCH_DTYPE[out_dtype]}
        back = qd.dequantize_per_tensor(want, scale, zp, lo, hi, TORCH_DTYPE[qdtype], **kw)
        got = np.empty(shape, dtype=out_dtype or np.float32)
        _C.call_kernel("quantized_decomposed::dequantize_per_tensor.out",
                       [q, scale, zp, lo, hi, dt(qdtype),
                        None if out_dtype is None else dt(out_dtype), got])
        np.testing.assert_array_equal(got, back.numpy())
        scale_t, zp_t = np.array([scale], np.float32), np.array([zp], np.int32)
        back_t = qd.dequantize_per_tensor.tensor(want, torch.from_numpy(scale_t),
                                                 torch.from_numpy(zp_t), lo, hi,
                                                 TORCH_DTYPE[qdtype], **kw)
        got_t = np.empty(shape, dtype=out_dtype or np.float32)
        _C.call_kernel("quantized_decomposed::dequantize_per_tensor.tensor_out",
                       [q, scale_t, zp_t, lo, hi, dt(qdtype),
                        None if out_dtype is None else dt(out_dtype), got_t])
        np.testing.assert_array_equal(got_t, back_t.numpy())


def test_quantize_per_tensor_widens_half_input() -> None:
    x = float_input((4, 7), 0.05).astype(np.float16)
    want = qd.quantize_per_tensor(torch.from_numpy(x), 0.05, 3, -128, 127, torch.int8)
    out = np.empty((4, 7), dtype=np.int8)
    _C.call_kernel("quantized_decomposed::quantize_per_tensor.out",
                   [x, 0.05, 3, -128, 127, dt(np.int8), out])
    np.testing.assert_array_equal(out, want.numpy())


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("scale_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zp_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_quantize_dequantize_per_channel(axis, scale_dtype, zp_dtype, layout) -> None:
    shape = (3, 4, 2, 5)
    channels = shape[axis]
    scales = (RNG.uniform(0.01, 0.1, size=channels)).astype(scale_dtype)
    zps = RNG.integers(-10, 10, size=channels).astype(zp_dtype)
    x = float_input(shape, 0.05)
    if layout == "channels_last":
        x = channels_last(x)
    tx = torch.from_numpy(np.array(x))
    want = qd.quantize_per_channel(tx, torch.from_numpy(scales), torch.from_numpy(zps), axis,
                                   -127, 127, torch.int8)
    out = np.empty(shape, dtype=np.int8)
    _C.call_kernel("quantized_decomposed::quantize_per_channel.out",
                   [x, scales, zps, axis, -127, 127, dt(np.int8), out])
    np.testing.assert_array_equal(out, want.numpy())

    for zero_points in (zps, None):
        back = qd.dequantize_per_channel(
            want, torch.from_numpy(scales),
            None if zero_points is None else torch.from_numpy(zero_points), axis, -127, 127,
            torch.int8)
        got = np.empty(shape, dtype=np.float32)
        _C.call_kernel("quantized_decomposed::dequantize_per_channel.out",
                       [want.numpy(), scales, zero_points, axis, -127, 127, dt(np.int8), None,
                        got])
        np.testing.assert_array_equal(got, back.numpy())


def test_dequantize_per_channel_int32_bias() -> None:
    q = RNG.integers(-(2**20), 2**20, size=16).astype(np.int32)
    scales = RNG.uniform(1e-6, 1e-4, size=16).astype(np.float32)
    zps = np.zeros(16, dtype=np.int32)
    want = qd.dequantize_per_channel(torch.from_numpy(q), torch.from_numpy(scales),
                                     torch.from_numpy(zps), 0, -(2**31), 2**31 - 1, torch.int32)
    got = np.empty(16, dtype=np.float32)
    _C.call_kernel("quantized_decomposed::dequantize_per_channel.out",
                   [q, scales, zps, 0, -(2**31), 2**31 - 1, dt(np.int32), None, got])
    np.testing.assert_array_equal(got, want.numpy())


def test_per_channel_broadcasts_one_scale() -> None:
    x = float_input((4, 6), 0.05)
    scale, zp = np.array([0.05], np.float32), np.array([2], np.int64)
    want = qd.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scale),
                                   torch.from_numpy(zp), 0, -127, 127, torch.int8)
    out = np.empty((4, 6), np.int8)
    _C.call_kernel("quantized_decomposed::quantize_per_channel.out",
                   [x, scale, zp, 0, -127, 127, dt(np.int8), out])
    np.testing.assert_array_equal(out, want.numpy())
    back = qd.dequantize_per_channel(want, torch.from_numpy(scale), torch.from_numpy(zp), 0,
                                     -127, 127, torch.int8)
    got = np.empty((4, 6), np.float32)
    _C.call_kernel("quantized_decomposed::dequantize_per_channel.out",
                   [out, scale, zp, 0, -127, 127, dt(np.int8), None, got])
    np.testing.assert_array_equal(got, back.numpy())


@pytest.mark.parametrize("shift", [-3.0, 0.0, 2.5, 100.0])
def test_choose_qparams(shift) -> None:
    x = (RNG.standard_normal((5, 9)) + shift).astype(np.float32)
    eps = float(torch.finfo(torch.float32).eps)
    want_scale, want_zp = qd.choose_qparams.tensor(torch.from_numpy(x), -128, 127, eps,
                                                   torch.int8)
    scale = np.empty(1, dtype=np.float64)
    zp = np.empty(1, dtype=np.int64)
    _C.call_kernel("quantized_decomposed::choose_qparams.Tensor_out",
                   [x, -128, 127, eps, dt(np.int8), scale, zp], returns=[5, 6])
    np.testing.assert_array_equal(scale, want_scale.numpy())
    np.testing.assert_array_equal(zp, want_zp.numpy())


@pytest.mark.parametrize(("scale", "zp", "message"), [
    (0.0, 0, "scale 0 must be finite and > 0"),
    (-0.5, 0, "scale -0.5 must be finite and > 0"),
    (math.nan, 0, "scale nan must be finite and > 0"),
    (0.1, 128, "zero_point 128 is outside int8's range"),
    (0.1, -129, "zero_point -129 is outside int8's range"),
])
def test_kernels_refuse_invalid_parameters(scale, zp, message) -> None:
    x = np.ones(4, np.float32)
    with pytest.raises(Exception, match=message):
        _C.call_kernel("quantized_decomposed::quantize_per_tensor.out",
                       [x, scale, zp, -128, 127, dt(np.int8), np.empty(4, np.int8)])
    with pytest.raises(Exception, match=message.replace("scale ", "scale\\[0\\] = ")
                       .replace("zero_point ", "zero_point\\[0\\] = ")):
        _C.call_kernel("quantized_decomposed::dequantize_per_channel.out",
                       [np.ones(4, np.int8), np.array([scale], np.float32),
                        np.array([zp], np.int64), 0, -128, 127, dt(np.int8), None,
                        np.empty(4, np.float32)])


# --- quantize, lower, run ----------------------------------------------------


def quantize(model, example, calibration, **config):
    """The tutorial's flow: capture, prepare, calibrate, convert."""
    graph = torch.export.export(model, example).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(**config))
    prepared = prepare_pt2e(graph, quantizer)
    with torch.no_grad():
        for batch in calibration:
            prepared(batch)
    return convert_pt2e(prepared)


# These tests are about the quantized_decomposed kernels, so the programs keep
# pt2e's dequantize → op → quantize chains; test_quantized_fused.py tests the
# fused integer ops that to_executorch makes of them by default.
UNFUSED = exir.ExecutorchBackendConfig(fuse_quantized_ops=False)


def lower(converted, example):
    return exir.to_edge(torch.export.export(converted, example)).to_executorch(UNFUSED)


def run(program, inputs):
    method = Runtime.get().load_program(bytes(program.buffer)).load_method("forward")
    return method.execute(list(inputs))


def output_step(converted) -> float:
    """The scale of the model output's final dequantize: one quantization step."""
    out = next(n for n in converted.graph.nodes if n.op == "output").args[0][0]
    assert out.target == qd.dequantize_per_tensor.default, out.target
    return float(out.args[1])


def ops_of(program) -> set[str]:
    return {str(n.target) for n in program.exported_program().graph.nodes
            if n.op == "call_function"}


@pytest.mark.parametrize("per_channel", [False, True])
def test_simple_conv(per_channel) -> None:
    torch.manual_seed(0)
    model = SimpleConv().eval()
    example = (torch.randn(1, 3, 32, 32),)
    calibration = [torch.randn(1, 3, 32, 32) for _ in range(16)]
    converted = quantize(model, example, calibration, is_per_channel=per_channel)
    program = lower(converted, example)
    ops = ops_of(program)
    qop = "quantize_per_channel" if per_channel else "quantize_per_tensor"
    assert any("dequantize_per_channel" in o for o in ops) == per_channel
    assert any(qop in o or "quantize_per_tensor.out" in o for o in ops)

    step = output_step(converted)
    x = torch.randn(4, 3, 32, 32)
    for xi in x.split(1):
        (got,) = run(program, (xi,))
        want = converted(xi)
        assert (got - want).abs().max().item() <= step * 1.001
    # Agreement with fp32 (reported in docs/quantization.md).
    with torch.no_grad():
        fp32 = model(x)
    int8 = torch.cat([run(program, (xi,))[0] for xi in x.split(1)])
    # The calibrated range clips a few outliers (HistogramObserver minimises
    # the overall error), so the worst pixel is off by more than the mean.
    assert (int8 - fp32).abs().mean().item() < 0.01
    assert (int8 - fp32).abs().max().item() < 0.25 * fp32.abs().max().item()
    # Per pixel, the strongest channel mostly agrees.
    assert (int8.argmax(1) == fp32.argmax(1)).float().mean().item() > 0.9


def synthetic_images(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """4 classes of 1x16x16 images: a horizontal bar, a vertical bar, a
    diagonal, or a square, at a random place, with noise."""
    labels = torch.randint(0, 4, (n,), generator=generator)
    x = 0.3 * torch.randn(n, 1, 16, 16, generator=generator)
    pos = torch.randint(2, 12, (n, 2), generator=generator)
    idx = torch.arange(16)
    for i in range(n):
        r, c = pos[i].tolist()
        label = int(labels[i])
        if label == 0:
            x[i, 0, r, 2:14] += 1.0
        elif label == 1:
            x[i, 0, 2:14, c] += 1.0
        elif label == 2:
            x[i, 0, idx[2:14], idx[2:14]] += 1.0
        else:
            x[i, 0, r - 2:r + 2, c - 2:c + 2] += 1.0
    return x, labels


class SmallCNN(torch.nn.Module):
    """Uses most ops the quantizer annotates: conv+relu, conv, add, relu6
    (hardtanh), cat, max pool, mul, avg pool, adaptive avg pool, linear+relu."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.register_buffer("gain", torch.linspace(0.5, 1.5, 16).reshape(1, 16, 1, 1))
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.relu(self.conv1(x))
        b = F.relu6(self.conv2(a) + a)
        c = F.max_pool2d(torch.cat([a, b], dim=1), 2)
        d = F.relu(self.conv3(c)) * self.gain
        d = F.avg_pool2d(d, 2)
        e = F.adaptive_avg_pool2d(d, 1).flatten(1)
        return self.fc2(F.relu(self.fc1(e)))


def train_small_cnn() -> tuple[SmallCNN, torch.Generator]:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)
    for _ in range(60):
        x, y = synthetic_images(64, gen)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval(), gen


@pytest.fixture(scope="module")
def small_cnn():
    return train_small_cnn()


@pytest.mark.parametrize("per_channel", [False, True])
def test_small_cnn_trained_here(small_cnn, per_channel) -> None:
    model, gen = small_cnn
    test_x, test_y = synthetic_images(256, gen)
    with torch.no_grad():
        fp32 = model(test_x)
    assert (fp32.argmax(1) == test_y).float().mean().item() > 0.9  # it learned the task

    calibration = synthetic_images(64, gen)[0].split(1)  # the program takes batch 1
    example = (test_x[:1],)
    converted = quantize(model, example, calibration, is_per_channel=per_channel)
    program = lower(converted, example)
    step = output_step(converted)
    int8 = torch.cat([run(program, (xi,))[0] for xi in test_x.split(1)])
    eager = torch.cat([converted(xi) for xi in test_x.split(1)])
    # Every kernel of the chain gives eager's int8 values at every quantize.
    # That takes eager's float32 summation order in avg pooling and in
    # aten.mean (adaptive_avg_pool2d to 1x1): the mean of dequantized int8
    # values often lies exactly halfway between two steps of the next
    # quantize, so any other order moves some outputs by whole steps
    # (docs/quantization.md). The issue asks for one step; we get zero.
    steps = ((int8 - eager).abs() / step).round()
    print(f"per_channel={per_channel}: steps from eager: "
          f"{int((steps == 0).sum())} identical, {int((steps == 1).sum())} one, "
          f"{int((steps > 1).sum())} more, of {steps.numel()}")
    assert steps.max().item() <= 1
    if torch.backends.cpu.get_cpu_capability() == "AVX2":  # eager's order is pinned for AVX2
        assert torch.equal(int8, eager)
    assert (int8.argmax(1) == eager.argmax(1)).float().mean().item() >= 0.99
    agreement = (int8.argmax(1) == fp32.argmax(1)).float().mean().item()
    assert agreement >= 0.95
    # A few large logits are clipped by the calibrated output range.
    assert (int8 - fp32).abs().max().item() < 0.25 * fp32.abs().max().item()


# --- float kernels between dequantize and quantize ---------------------------
#
# An average of dequantized int8 values (k * scale / n) often lies exactly
# halfway between two quantization steps, so the next quantize_per_tensor
# rounds it by its last bit: the pooling kernels must round exactly as eager.

POOL_DTYPES = [np.float32, np.float64, np.float16]


def grid_input(shape, dtype) -> np.ndarray:
    """Dequantized int8 values: (q - zp) * scale."""
    q = RNG.integers(-128, 128, size=shape).astype(np.float32)
    return ((q + 17) * np.float32(0.0990529)).astype(dtype)


@pytest.mark.parametrize("args", [
    # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ([2, 2], [], [0, 0], False, True, None),
    ([3, 3], [2, 2], [1, 1], False, True, None),
    ([3, 3], [2, 2], [1, 1], True, False, None),
    ([2, 3], [1, 2], [1, 1], False, True, 5),
])
@pytest.mark.parametrize("dtype", POOL_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_avg_pool2d_rounds_as_eager(args, dtype, layout) -> None:
    x = grid_input((2, 16, 9, 8), dtype)
    want = torch.ops.aten.avg_pool2d.default(torch.from_numpy(x), *args).numpy()
    out = np.empty(want.shape, dtype)
    _C.call_kernel("aten::avg_pool2d.out",
                   [channels_last(x) if layout == "channels_last" else x, *args, out])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", POOL_DTYPES[:2])
def test_avg_pool3d_rounds_as_eager(dtype) -> None:
    x = grid_input((2, 3, 5, 6, 7), dtype)
    for args in ([[2, 2, 2], [], [0, 0, 0], False, True, None],
                 [[3, 3, 3], [2, 2, 2], [1, 1, 1], True, False, None]):
        want = torch.ops.aten.avg_pool3d.default(torch.from_numpy(x), *args).numpy()
        out = np.empty(want.shape, dtype)
        _C.call_kernel("aten::avg_pool3d.out", [x, *args, out])
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("size", [[3, 4], [2, 2], [5, 3]])
@pytest.mark.parametrize("dtype", POOL_DTYPES)
def test_adaptive_avg_pool_rounds_as_eager(size, dtype) -> None:
    x = grid_input((2, 16, 7, 9), dtype)
    want = torch.ops.aten._adaptive_avg_pool2d.default(torch.from_numpy(x), size).numpy()
    out = np.empty(want.shape, dtype)
    _C.call_kernel("aten::_adaptive_avg_pool2d.out", [channels_last(x), size, out])
    np.testing.assert_array_equal(out, want)
    if dtype == np.float16:
        return  # eager's 3-d kernel sums float16 in float16; Ember's in float32
    x3 = grid_input((2, 3, 5, 7, 4), dtype)
    want3 = torch.ops.aten._adaptive_avg_pool3d.default(torch.from_numpy(x3), [2] + size).numpy()
    out3 = np.empty(want3.shape, dtype)
    _C.call_kernel("aten::_adaptive_avg_pool3d.out", [x3, [2] + size, out3])
    np.testing.assert_array_equal(out3, want3)


class PoolCNN(torch.nn.Module):
    """Quantized convs, linear and three kinds of average pooling (no mean)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 3 * 3, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(F.relu(self.conv1(x)), 2)
        x = F.avg_pool2d(self.conv2(x), 3, stride=2, padding=1, count_include_pad=False)
        return self.fc(F.adaptive_avg_pool2d(x, 3).flatten(1))


@pytest.mark.parametrize("per_channel", [False, True])
def test_pooling_model_matches_eager(per_channel) -> None:
    torch.manual_seed(0)
    model = PoolCNN().eval()
    example = (torch.randn(1, 3, 20, 20),)
    calibration = [torch.randn(1, 3, 20, 20) for _ in range(16)]
    converted = quantize(model, example, calibration, is_per_channel=per_channel)
    program = lower(converted, example)
    step = output_step(converted)
    x = torch.randn(32, 3, 20, 20)
    got = torch.cat([run(program, (xi,))[0] for xi in x.split(1)])
    want = torch.cat([converted(xi) for xi in x.split(1)])
    steps = ((got - want).abs() / step).round()
    # The bound on every output. Identical here; conv and linear sum
    # in another order than eager's BLAS, which could (rarely: their outputs
    # are not on a half-step grid) move one value by a step on another CPU.
    assert steps.max().item() <= 1
    assert (steps == 0).float().mean().item() >= 0.99


class WithUnannotatedOps(torch.nn.Module):
    """sigmoid and layer_norm are not annotated: they stay float."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.sigmoid(self.conv(x))
        y = self.norm(y.mean((2, 3)))
        return self.fc(y)


def test_unannotated_ops_stay_float() -> None:
    torch.manual_seed(0)
    model = WithUnannotatedOps().eval()
    example = (torch.randn(1, 3, 8, 8),)
    converted = quantize(model, example, [torch.randn(1, 3, 8, 8) for _ in range(8)])
    # sigmoid, mean and layer_norm compute in float (no quantize between them);
    # the linear after them quantizes its input again.
    targets = {n.target: n for n in converted.graph.nodes if n.op == "call_function"}
    sigmoid = targets[torch.ops.aten.sigmoid.default]
    assert all(u.target != qd.quantize_per_tensor.default for u in sigmoid.users)
    norm = targets[torch.ops.aten.layer_norm.default]
    assert norm.args[0].target == torch.ops.aten.mean.dim
    program = lower(converted, example)
    assert any("sigmoid" in o for o in ops_of(program))
    assert any("quantize_per_tensor" in o for o in ops_of(program))
    x = torch.randn(1, 3, 8, 8)
    (got,) = run(program, (x,))
    torch.testing.assert_close(got, converted(x), rtol=1e-4, atol=output_step(converted) * 1.001)


def test_dynamic_linear_uses_choose_qparams() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 3)).eval()
    example = (torch.randn(2, 12),)
    # Dynamic still calibrates: the weight observers need one forward pass.
    calibration = [torch.randn(2, 12) for _ in range(4)]
    converted = quantize(model, example, calibration, is_per_channel=True, is_dynamic=True)
    program = lower(converted, example)
    ops = ops_of(program)
    assert any("choose_qparams" in o for o in ops)
    assert any("quantize_per_tensor.tensor_out" in o for o in ops)
    x = torch.randn(2, 12)
    (got,) = run(program, (x,))
    torch.testing.assert_close(got, converted(x), rtol=1e-4, atol=1e-5)
    assert (got - model(x)).abs().max().item() < 0.05


# --- invalid parameters in a program -------------------------------------------


def _edge_simple_conv(per_channel: bool):
    torch.manual_seed(0)
    example = (torch.randn(1, 3, 8, 8),)
    converted = quantize(SimpleConv().eval(), example, [torch.randn(1, 3, 8, 8)],
                         is_per_channel=per_channel)
    return exir.to_edge(torch.export.export(converted, example))


def _load(program):
    return Runtime.get().load_program(bytes(program.buffer)).load_method("forward")


@pytest.mark.parametrize(("arg", "value", "message"), [
    (1, 0.0, "scale 0 must be finite and > 0"),
    (1, -0.25, "scale -0.25 must be finite and > 0"),
    (1, math.nan, "scale nan must be finite and > 0"),
    (2, 300, "zero_point 300 is outside int8's range"),
])
def test_load_refuses_invalid_scalar_parameters(arg, value, message) -> None:
    edge = _edge_simple_conv(per_channel=False)
    gm = edge.exported_program().graph_module
    node = next(n for n in gm.graph.nodes
                if n.op == "call_function" and "quantize_per_tensor" in str(n.target)
                and "dequantize" not in str(n.target))
    args = list(node.args)
    args[arg] = value
    node.args = tuple(args)
    program = edge.to_executorch(UNFUSED)
    with pytest.raises(Exception, match=r"instruction \d+: quantized_decomposed::"
                       r"quantize_per_tensor\.out: " + message):
        _load(program)


def test_load_refuses_invalid_per_channel_constants() -> None:
    edge = _edge_simple_conv(per_channel=True)
    ep = edge.exported_program()
    node = next(n for n in ep.graph.nodes if "dequantize_per_channel" in str(n.target))
    scales_name = ep.graph_signature.inputs_to_buffers[node.args[1].name]
    ep.state_dict[scales_name][3] = -1.0
    with pytest.raises(Exception, match=r"dequantize_per_channel\.out: scale\[3\] = -1 must be"):
        _load(edge.to_executorch(UNFUSED))
