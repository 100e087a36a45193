"""The channel-blocked layout NCHW16c: the layout ops (``to_nchw16c``,
``from_nchw16c``) and the blocked convolution (``conv2d_nchw16c``) against
their eager references through ``call_kernel``, their errors, and the pass
that puts a CNN's convolutions on the layout (passes/nchw16c_layout.py):
where it converts, that it changes the layout only at the edges, and that
the program still matches eager.

Tolerance: the blocked kernel sums in another order than eager's
convolution (tap by tap, then channels), so results agree to float32
rounding of sums of up to a few thousand products: 2e-5 of the output's
magnitude (the reference must not have collapsed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ember.exir import ExecutorchBackendConfig, to_edge
from torch.export import export

_C = pytest.importorskip("ember._C")
from ember.exir.operator import ember_fused
from ember.exir.passes.nchw16c_layout import Nchw16cLayoutPass
from ember.runtime import Runtime
from magnitude import assert_close_to_magnitude

F = torch.nn.functional
RTOL = 2e-5


@pytest.mark.parametrize("shape", [(1, 16, 5, 7), (2, 40, 3, 4), (1, 3, 8, 8), (2, 0, 3, 3),
                                   (1, 32, 1, 1)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_layout_ops_round_trip(shape, channels_last):
    x = torch.randn(shape)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    want = ember_fused.to_nchw16c(x)
    assert want.shape == (shape[0], -(-shape[1] // 16), shape[2], shape[3], 16)
    blocked = np.full(tuple(want.shape), np.nan, np.float32)
    _C.call_kernel("ember_fused::to_nchw16c.out", [x.numpy(), blocked])
    np.testing.assert_array_equal(blocked, want.numpy())  # padded lanes zero
    back = np.full(shape, np.nan, np.float32)
    _C.call_kernel("ember_fused::from_nchw16c.out", [blocked, shape[1], back])
    np.testing.assert_array_equal(back, x.numpy())


def test_layout_op_errors():
    blocked = np.zeros((1, 2, 3, 3, 16), np.float32)
    with pytest.raises(RuntimeError, match="channels: 40 does not fill the 2 blocks"):
        _C.call_kernel("ember_fused::from_nchw16c.out",
                       [blocked, 40, np.zeros((1, 40, 3, 3), np.float32)])
    with pytest.raises(RuntimeError, match=r"expected \[N, C, H, W\]"):
        _C.call_kernel("ember_fused::to_nchw16c.out",
                       [np.zeros((2, 3), np.float32), np.zeros((1,), np.float32)])


# (N, Cin, H, W, Cout, K, stride, padding): pointwise planes with tails, 3×3 and
# 7×7 with padding, stride 2 and 3 (the portable loops), channel counts off 16,
# output groups of 1 to 5 blocks.
CONV_CASES = [
    (1, 64, 8, 7, 256, 1, 1, 0),
    (2, 32, 9, 10, 48, 1, 1, 0),
    (1, 48, 11, 11, 80, 1, 2, 0),
    (1, 16, 14, 14, 16, 3, 1, 1),
    (2, 40, 11, 13, 70, 3, 1, 1),
    (1, 32, 15, 15, 64, 3, 2, 1),
    (1, 3, 17, 17, 20, 7, 2, 3),
    (1, 16, 10, 10, 32, 3, 3, 0),
    (1, 64, 7, 7, 64, 5, 1, 2),
]


@pytest.mark.parametrize("case", [(1, 3, 23, 23, 64, 7, 2, 3), (2, 5, 9, 8, 20, 3, 1, 1),
                                  (1, 16, 6, 6, 32, 1, 1, 0)], ids=lambda c: "x".join(map(str, c)))
def test_conv2d_nchw16c_plain_input(case):
    # A stem's NCHW input read as it is: the same result as blocking it first.
    xb, weight, b, stride, padding, rb, lo, hi, want = _conv_case(case, True, False, (0.0, None))
    x = ember_fused.from_nchw16c(xb, case[1])
    out = np.full(tuple(want.shape), np.nan, np.float32)
    _C.call_kernel("ember_fused::conv2d_nchw16c.out",
                   [x.numpy(), weight.numpy(), b.numpy(), stride, padding, None, lo, hi, out],
                   constants=[1, 2])
    cout = weight.shape[0]
    assert_close_to_magnitude(ember_fused.from_nchw16c(torch.from_numpy(out), cout),
                              ember_fused.from_nchw16c(want, cout), RTOL)


@pytest.mark.parametrize("shape,k,s,p,ceil", [
    ((1, 32, 112, 112), 3, 2, 1, False), ((2, 20, 9, 10), 3, 2, 1, True),
    ((1, 16, 7, 7), 2, 2, 0, True), ((1, 16, 5, 5), 5, 1, 2, False)])
def test_max_pool2d_nchw16c_matches_eager(shape, k, s, p, ceil):
    x = torch.randn(shape)
    # Against eager without NaN; with one, against which windows hold it (the
    # max of a 0/1 mask): NaN wins (docs/special-values.md), not eager's CPU path.
    for with_nan in (False, True):
        xi = x.clone()
        if with_nan:
            xi[0, 1, 2, 3] = float("nan")
        xb = ember_fused.to_nchw16c(xi)
        out = np.full(tuple(ember_fused.to_nchw16c(
            F.max_pool2d(x, k, s, p, ceil_mode=ceil)).shape), 7.0, np.float32)
        _C.call_kernel("ember_fused::max_pool2d_nchw16c.out",
                       [xb.numpy(), [k, k], [s, s], [p, p], ceil, out])
        got = ember_fused.from_nchw16c(torch.from_numpy(out), shape[1])
        assert not out[:, -1, ..., shape[1] % 16 or 16:].any()  # padded lanes stay zero
        want = F.max_pool2d(x, k, s, p, ceil_mode=ceil)
        if not with_nan:
            torch.testing.assert_close(got, want, rtol=0, atol=0)
            continue
        hit = F.max_pool2d(torch.isnan(xi).float(), k, s, p, ceil_mode=ceil) > 0
        assert hit.any()
        assert torch.isnan(got[hit]).all()
        torch.testing.assert_close(got[~hit], want[~hit], rtol=0, atol=0)


def _conv_case(case, bias, residual, bounds, seed=0):
    n, cin, h, w, cout, k, s, p = case
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, cin, h, w, generator=g)
    weight = torch.randn(cout, cin, k, k, generator=g) / (cin * k * k) ** 0.5
    b = torch.randn(cout, generator=g) if bias else None
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    r = torch.randn(n, cout, oh, ow, generator=g) if residual else None
    xb = ember_fused.to_nchw16c(x)
    rb = None if r is None else ember_fused.to_nchw16c(r)
    lo, hi = bounds
    want = ember_fused.conv2d_nchw16c(xb, weight, b, [s, s], [p, p], rb, lo, hi)
    return xb, weight, b, [s, s], [p, p], rb, lo, hi, want


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("bias,residual,bounds", [
    (True, True, (0.0, None)), (False, False, (None, None)), (True, False, (-0.5, 0.75)),
    (True, True, (None, 1.0)),
])
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_nchw16c_matches_eager(case, bias, residual, bounds, threads):
    xb, weight, b, stride, padding, rb, lo, hi, want = _conv_case(case, bias, residual, bounds)
    out = np.full(tuple(want.shape), np.nan, np.float32)
    args = [xb.numpy(), weight.numpy(), None if b is None else b.numpy(), stride, padding,
            None if rb is None else rb.numpy(), lo, hi, out]
    before = _C.threads()
    _C.set_threads(threads)
    try:
        _C.call_kernel("ember_fused::conv2d_nchw16c.out", args,
                       constants=[1] if b is None else [1, 2], runs=2)
    finally:
        _C.set_threads(before)
    got = torch.from_numpy(out)
    cout = weight.shape[0]
    assert_close_to_magnitude(ember_fused.from_nchw16c(got, cout),
                              ember_fused.from_nchw16c(want, cout), RTOL)
    if cout % 16:  # channels past Cout are zero, whatever the bounds
        assert not got[:, -1, ..., cout % 16:].any()


@pytest.mark.parametrize("case", CONV_CASES[3:5], ids=lambda c: "x".join(map(str, c)))
def test_conv2d_nchw16c_weight_not_a_constant(case):
    # Packed into scratch on every call instead of once at load: the same bits.
    xb, weight, b, stride, padding, rb, lo, hi, want = _conv_case(case, True, True, (0.0, None))
    outs = []
    for constants in ([1, 2], []):
        out = np.full(tuple(want.shape), np.nan, np.float32)
        _C.call_kernel("ember_fused::conv2d_nchw16c.out",
                       [xb.numpy(), weight.numpy(), b.numpy(), stride, padding, rb.numpy(), lo,
                        hi, out], constants=constants, runs=2)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    cout = weight.shape[0]
    assert_close_to_magnitude(ember_fused.from_nchw16c(torch.from_numpy(outs[1]), cout),
                              ember_fused.from_nchw16c(want, cout), RTOL)


@pytest.mark.parametrize("case", [(1, 64, 28, 28, 64, 3, 1, 1), (2, 40, 30, 29, 70, 3, 1, 1),
                                  (1, 32, 33, 31, 48, 3, 1, 0)],
                         ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_nchw16c_winograd_matches_eager(case, threads):
    # 3×3 stride 1 on planes of 28×28 or more: Winograd F(4×4, 3×3) with a
    # constant weight (the transforms cost some accuracy: 3e-5 of the magnitude).
    xb, weight, b, stride, padding, rb, lo, hi, want = _conv_case(case, True, True, (-1.0, 2.0))
    out = np.full(tuple(want.shape), np.nan, np.float32)
    before = _C.threads()
    _C.set_threads(threads)
    try:
        _C.call_kernel("ember_fused::conv2d_nchw16c.out",
                       [xb.numpy(), weight.numpy(), b.numpy(), stride, padding, rb.numpy(), lo,
                        hi, out], constants=[1, 2], runs=2)
    finally:
        _C.set_threads(before)
    cout = weight.shape[0]
    got = torch.from_numpy(out)
    assert_close_to_magnitude(ember_fused.from_nchw16c(got, cout),
                              ember_fused.from_nchw16c(want, cout), 3e-5)
    if cout % 16:
        assert not got[:, -1, ..., cout % 16:].any()


def test_conv2d_nchw16c_threads_give_the_same_bits():
    xb, weight, b, stride, padding, rb, lo, hi, want = _conv_case(
        (1, 64, 14, 14, 128, 3, 1, 1), True, True, (0.0, None))
    outs = []
    before = _C.threads()
    for threads in (1, 2):
        out = np.empty(tuple(want.shape), np.float32)
        _C.set_threads(threads)
        try:
            _C.call_kernel("ember_fused::conv2d_nchw16c.out",
                           [xb.numpy(), weight.numpy(), b.numpy(), stride, padding, rb.numpy(),
                            lo, hi, out], constants=[1, 2])
        finally:
            _C.set_threads(before)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_conv2d_nchw16c_errors():
    x = np.zeros((1, 2, 5, 5, 16), np.float32)
    w = np.zeros((16, 32, 3, 3), np.float32)
    out = np.zeros((1, 1, 5, 5, 16), np.float32)
    call = _C.call_kernel
    with pytest.raises(RuntimeError, match="input: 2 channel blocks, the weight's 48 input"):
        call("ember_fused::conv2d_nchw16c.out",
             [x, np.zeros((16, 48, 3, 3), np.float32), None, [1, 1], [1, 1], None, None, None,
              out], constants=[1])
    with pytest.raises(RuntimeError, match="an NCHW input of 32 channels .* at most 16"):
        call("ember_fused::conv2d_nchw16c.out",
             [np.zeros((1, 32, 5, 5), np.float32), w, None, [1, 1], [1, 1], None, None, None,
              out], constants=[1])
    with pytest.raises(RuntimeError, match="input: expected a contiguous NCHW16c tensor"):
        call("ember_fused::conv2d_nchw16c.out",
             [np.zeros((1, 2, 5, 5, 8), np.float32), w, None, [1, 1], [1, 1], None, None, None,
              out], constants=[1])
    with pytest.raises(RuntimeError, match="smaller than the 3×3 kernel"):
        call("ember_fused::conv2d_nchw16c.out",
             [np.zeros((1, 2, 1, 1, 16), np.float32), w, None, [1, 1], [0, 0], None, None, None,
              out], constants=[1])
    with pytest.raises(RuntimeError, match="min: 1 is greater than max 0"):
        call("ember_fused::conv2d_nchw16c.out", [x, w, None, [1, 1], [1, 1], None, 1.0, 0.0,
                                                 out], constants=[1])


class Bottleneck(torch.nn.Module):
    def __init__(self, c: int, mid: int, stride: int = 1) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(c, mid, 1)
        self.b = torch.nn.Conv2d(mid, mid, 3, stride, 1)
        self.c = torch.nn.Conv2d(mid, c * (2 if stride == 2 else 1), 1)
        self.bn = torch.nn.BatchNorm2d(mid)
        self.down = torch.nn.Conv2d(c, c * 2, 1, 2) if stride == 2 else None

    def forward(self, x):
        y = F.relu(self.a(x))
        y = F.relu(self.bn(self.b(y)))
        short = x if self.down is None else self.down(x)
        return F.relu(self.c(y) + short)


class TinyResNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 64, 7, 2, 3)
        self.blocks = torch.nn.Sequential(Bottleneck(64, 64), Bottleneck(64, 64, 2),
                                          Bottleneck(128, 64))
        self.fc = torch.nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1)
        return self.fc(self.blocks(x).mean((2, 3)))


def _targets(program) -> list[str]:
    ep = program.exported_program()
    return [str(n.target).split("ops.")[-1] for n in ep.graph.nodes if n.op == "call_function"]


def _count(program, name: str) -> int:
    return sum(name in t for t in _targets(program))


def _run(program, inputs):
    return Runtime.get().load_program(program.buffer).load_method("forward").execute(inputs)[0]


def test_resnet_stays_blocked_from_the_stem_to_the_mean():
    torch.manual_seed(0)
    model = TinyResNet().eval()
    x = torch.randn(2, 3, 64, 64)
    program = to_edge(export(model, (x,))).to_executorch(ExecutorchBackendConfig())
    # The stem reads the 3-channel input as it is, the pool and every
    # bottleneck convolution (3 + 4 + 3) run blocked: one conversion, at the end.
    assert _count(program, "conv2d_nchw16c") == 11
    assert _count(program, "max_pool2d_nchw16c") == 1
    assert _count(program, "to_nchw16c") == 0
    assert _count(program, "from_nchw16c") == 1
    assert _count(program, "fused_convolution") == 0
    assert_close_to_magnitude(_run(program, [x]), model(x), RTOL)


def test_the_option_keeps_nchw_convolutions():
    model = TinyResNet().eval()
    x = torch.randn(1, 3, 32, 32)
    program = to_edge(export(model, (x,))).to_executorch(
        ExecutorchBackendConfig(nchw16c_layout=False))
    assert _count(program, "nchw16c") == 0
    assert_close_to_magnitude(_run(program, [x]), model(x), RTOL)


def test_bf16_precision_keeps_its_own_convolutions():
    model = TinyResNet().eval()
    x = torch.randn(1, 3, 32, 32)
    program = to_edge(export(model, (x,))).to_executorch(
        ExecutorchBackendConfig(precision="bf16"))
    assert _count(program, "nchw16c") == 0


class DepthwiseSandwich(torch.nn.Module):
    """A pointwise layer between depthwise ones (MobileNet's): too little work
    to pay for a layout change on each side."""

    def __init__(self) -> None:
        super().__init__()
        self.dw1 = torch.nn.Conv2d(32, 32, 3, 1, 1, groups=32)
        self.pw = torch.nn.Conv2d(32, 64, 1)
        self.dw2 = torch.nn.Conv2d(64, 64, 3, 1, 1, groups=64)

    def forward(self, x):
        return self.dw2(F.relu6(self.pw(F.relu6(self.dw1(x)))))


def test_a_lone_pointwise_layer_stays_nchw():
    model = DepthwiseSandwich().eval()
    x = torch.randn(1, 32, 28, 28)
    program = to_edge(export(model, (x,))).to_executorch(ExecutorchBackendConfig())
    assert _count(program, "nchw16c") == 0


def test_a_large_layer_alone_converts_and_counts():
    model = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(1, 64, 20, 20)
    ep = to_edge(export(model, (x,))).exported_program()
    layout = Nchw16cLayoutPass()
    # The pass runs after fusion in to_executorch; alone it takes aten convolutions too.
    layout(ep)
    assert (layout.converted, layout.to_blocked, layout.from_blocked) == (1, 1, 1)
    program = to_edge(export(model, (x,))).to_executorch(ExecutorchBackendConfig())
    assert _count(program, "conv2d_nchw16c") == 1
    assert_close_to_magnitude(_run(program, [x]), model(x), RTOL)


def test_dynamic_batch():
    model = TinyResNet().eval()
    x = torch.randn(3, 3, 32, 32)
    batch = torch.export.Dim("batch", min=1, max=4)
    program = to_edge(export(model, (x,), dynamic_shapes=({0: batch},))).to_executorch(
        ExecutorchBackendConfig())
    assert _count(program, "conv2d_nchw16c") == 11
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    for n in (1, 3, 4):
        xi = torch.randn(n, 3, 32, 32)
        assert_close_to_magnitude(method.execute([xi])[0], model(xi), RTOL)
