"""Ember kernels of non-core ops export leaves (cummax, cummin, logcumsumexp, adaptive_max_pool2d,
searchsorted, bucketize, angle, frexp, _embedding_bag_forward_only) against eager.

Kernel calls through ``call_kernel`` across dtypes, dims, layouts (transposed
input), empty and 0-d tensors, ties and NaN/inf; then the ops through the
whole flow (export -> to_edge -> to_executorch -> runtime), and
``nn.functional.embedding_bag``, which exports to ``_embedding_bag_forward_only``.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_samples import sample

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

aten = torch.ops.aten
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16,
          torch.int32, torch.int64, torch.uint8, torch.bool]


CASES = [(dtype, kind) for dtype in DTYPES for kind in ("random", "ties", "nan_inf")
         if kind != "nan_inf" or dtype.is_floating_point]  # integers have no NaN


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype,kind", CASES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin(op, dtype, kind, dim):
    x = sample((5, 7), dtype, kind)
    want_v, want_i = getattr(aten, op).default(x, dim)
    for layout, xin in (("contiguous", x), ("transposed", x.t().contiguous().t())):
        v, i = torch.empty_like(want_v), torch.empty_like(want_i)
        _C.call_kernel(f"aten::{op}.out", [xin, dim, v, i], returns=[2, 3])
        torch.testing.assert_close(v, want_v, rtol=0, atol=0, equal_nan=True, msg=layout)
        assert torch.equal(i, want_i), (layout, i, want_i)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_empty_and_0d(op):
    e = torch.zeros((0, 3))
    v, i = torch.empty((0, 3)), torch.empty((0, 3), dtype=torch.int64)
    _C.call_kernel(f"aten::{op}.out", [e, 1, v, i], returns=[2, 3])
    s = torch.tensor(2.5)
    v, i = torch.empty(()), torch.empty((), dtype=torch.int64)
    _C.call_kernel(f"aten::{op}.out", [s, 0, v, i], returns=[2, 3])
    assert v.item() == 2.5 and i.item() == 0
    with pytest.raises(RuntimeError, match="dim"):
        _C.call_kernel(f"aten::{op}.out", [torch.zeros(3), 2, torch.empty(3),
                                          torch.empty(3, dtype=torch.int64)], returns=[2, 3])
    with pytest.raises(RuntimeError, match="indices: expected dtype int64"):
        _C.call_kernel(f"aten::{op}.out", [torch.zeros(3), 0, torch.empty(3),
                                          torch.empty(3, dtype=torch.int32)], returns=[2, 3])


# Eager accumulates float32 in float32; Ember in float64: bound the difference
# by the float64 reference's magnitude.
LOGCUMSUMEXP_TOL = {torch.float32: 2e-6, torch.float64: 1e-12, torch.float16: 2e-3,
                    torch.bfloat16: 1.6e-2}


@pytest.mark.parametrize("dtype", list(LOGCUMSUMEXP_TOL))
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("scale", [1.0, 80.0])
def test_logcumsumexp(dtype, dim, scale):
    x = (sample((6, 40), torch.float64) * scale).to(dtype)
    want = aten.logcumsumexp.default(x.double(), dim)
    for xin in (x, x.t().contiguous().t()):
        out = torch.empty_like(x)
        _C.call_kernel("aten::logcumsumexp.out", [xin, dim, out])
        err = (out.double() - want).abs().max().item()
        assert err <= LOGCUMSUMEXP_TOL[dtype] * want.abs().max().item(), err
        if dtype == torch.float64:
            torch.testing.assert_close(out, aten.logcumsumexp.default(x, dim))


def test_logcumsumexp_infinities_and_nan():
    x = torch.tensor([-float("inf"), -float("inf"), 0.0, float("inf"), 1.0, float("inf"),
                      float("nan"), 2.0])
    out = torch.empty_like(x)
    _C.call_kernel("aten::logcumsumexp.out", [x, 0, out])
    torch.testing.assert_close(out, aten.logcumsumexp.default(x, 0), equal_nan=True)
    with pytest.raises(RuntimeError, match="self: unsupported dtype int32"):
        _C.call_kernel("aten::logcumsumexp.out", [torch.zeros(3, dtype=torch.int32), 0,
                                                  torch.empty(3, dtype=torch.int32)],
                       check_dtypes=False)


def run_program(module, *args):
    from ember.exir import to_edge
    from ember.runtime import Runtime

    program = to_edge(torch.export.export(module, args)).to_executorch()
    return Runtime.get().load_program(program.buffer).load_method("forward").execute(list(args))


class Cumulative(torch.nn.Module):
    def forward(self, x):
        v, i = torch.cummax(x, 1)
        w, j = torch.cummin(x, 0)
        return v, i, w, j, torch.logcumsumexp(x, 1)


def test_cumulative_ops_through_the_whole_flow():
    x = sample((4, 9), torch.float32)
    got = run_program(Cumulative(), x)
    want = Cumulative()(x)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g = torch.as_tensor(g)
        if w.dtype.is_floating_point:
            torch.testing.assert_close(g, w, rtol=2e-6, atol=2e-6 * w.abs().max().item())
        else:
            assert torch.equal(g, w)


class Bags(torch.nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def forward(self, weight, indices, offsets):
        return torch.nn.functional.embedding_bag(indices, weight, offsets, mode=self.mode)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_exports_to_forward_only_and_runs(mode):
    from ember.exir import to_edge

    # A weight that needs no gradient (an input here) is what makes PyTorch's
    # decomposition pick _embedding_bag_forward_only.
    weight = torch.randn(10, 4, generator=torch.Generator().manual_seed(1))
    args = (weight, torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4, 6]))
    module = Bags(mode)
    edge = to_edge(torch.export.export(module, args)).exported_program()
    targets = {str(n.target) for n in edge.graph.nodes if n.op == "call_function"}
    assert any("_embedding_bag_forward_only" in t for t in targets), targets
    (got,) = run_program(module, *args)
    torch.testing.assert_close(torch.as_tensor(got), module(*args), rtol=1e-6, atol=1e-6)


# --- adaptive_max_pool2d (non-core; Ember kernel) -----------------------------

ADAPTIVE_CASES = [((2, 3, 7, 9), [3, 4]), ((3, 8, 8), [8, 8]), ((1, 2, 5, 6), [1, 1]),
                  ((2, 3, 4, 5), [6, 7]), ((1, 1, 1, 10), [1, 4])]


@pytest.mark.parametrize("shape,size", ADAPTIVE_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kind", ["random", "ties", "nan_inf"])
def test_adaptive_max_pool2d(shape, size, dtype, kind):
    x = sample(shape, dtype, kind)
    want_v, want_i = aten.adaptive_max_pool2d.default(x, size)
    layouts = [("contiguous", x)]
    if x.dim() == 4:
        layouts.append(("channels-last", x.contiguous(memory_format=torch.channels_last)))
    for layout, xin in layouts:
        v, i = torch.empty_like(want_v), torch.empty_like(want_i)
        _C.call_kernel("aten::adaptive_max_pool2d.out", [xin, size, v, i], returns=[2, 3])
        torch.testing.assert_close(v, want_v, rtol=0, atol=0, equal_nan=True, msg=layout)
        assert torch.equal(i, want_i), layout


def test_adaptive_max_pool2d_errors():
    v, i = torch.empty(1, 2, 2), torch.empty(1, 2, 2, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="output_size: expected 2 values"):
        _C.call_kernel("aten::adaptive_max_pool2d.out", [torch.zeros(1, 4, 4), [2], v, i],
                       returns=[2, 3])
    with pytest.raises(RuntimeError, match="indices: expected dtype int64"):
        _C.call_kernel("aten::adaptive_max_pool2d.out",
                       [torch.zeros(1, 4, 4), [2, 2], v, torch.empty(1, 2, 2, dtype=torch.int32)],
                       returns=[2, 3])


class AdaptiveMax(torch.nn.Module):
    def forward(self, x, y):
        a, ai = torch.nn.functional.adaptive_max_pool2d(x, (3, 2), return_indices=True)
        b = torch.nn.functional.adaptive_max_pool1d(y, 4)
        return a, ai, b


def test_adaptive_max_pools_through_the_whole_flow():
    x, y = sample((2, 3, 8, 7), torch.float32), sample((2, 5, 11), torch.float32, seed=3)
    got = run_program(AdaptiveMax(), x, y)
    want = AdaptiveMax()(x, y)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(torch.as_tensor(g), w)


# --- searchsorted / bucketize (non-core; Ember kernels) -----------------------

SEARCH_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                 torch.int16, torch.int32, torch.int64, torch.uint8]


def sorted_rows(shape, dtype, seed=0):
    return sample(shape, dtype, "ties", seed).sort(dim=-1).values if not dtype.is_floating_point \
        else sample(shape, dtype, seed=seed).sort(dim=-1).values


@pytest.mark.parametrize("dtype", SEARCH_DTYPES)
@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_bucketize_and_1d_searchsorted(dtype, right, out_int32):
    boundaries = sorted_rows((9,), dtype)
    values = sample((4, 6), dtype, "ties" if not dtype.is_floating_point else "random", seed=2)
    out_dtype = torch.int32 if out_int32 else torch.int64
    want = aten.bucketize.Tensor(values, boundaries, out_int32=out_int32, right=right)
    for vin in (values, values.t().contiguous().t()):
        out = torch.empty(values.shape, dtype=out_dtype)
        _C.call_kernel("aten::bucketize.Tensor_out", [vin, boundaries, out_int32, right, out])
        assert torch.equal(out, want)
    want = aten.searchsorted.Tensor(boundaries, values, out_int32=out_int32, right=right)
    out = torch.empty(values.shape, dtype=out_dtype)
    _C.call_kernel("aten::searchsorted.Tensor_out",
                   [boundaries, values, out_int32, right, None, None, out])
    assert torch.equal(out, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("side", [None, "left", "right"])
def test_searchsorted_rows_sorter_and_side(dtype, side):
    unsorted = sample((2, 3, 8), dtype, "ties" if dtype == torch.int64 else "random")
    sorter = unsorted.argsort(dim=-1, stable=True)
    values = sample((2, 3, 5), dtype, "ties" if dtype == torch.int64 else "random", seed=4)
    want = aten.searchsorted.Tensor(unsorted, values, side=side, sorter=sorter)
    out = torch.empty(values.shape, dtype=torch.int64)
    _C.call_kernel("aten::searchsorted.Tensor_out", [unsorted, values, False, False, side, sorter, out])
    assert torch.equal(out, want)
    seq = unsorted.sort(dim=-1).values
    want = aten.searchsorted.Tensor(seq, values, side=side)
    _C.call_kernel("aten::searchsorted.Tensor_out", [seq, values, False, False, side, None, out])
    assert torch.equal(out, want)


def test_searchsorted_nan_empty_and_errors():
    seq = torch.tensor([1.0, 2.0, float("nan")])
    values = torch.tensor([float("nan"), 1.5, -float("inf"), float("inf")])
    out = torch.empty(4, dtype=torch.int64)
    for right in (False, True):
        _C.call_kernel("aten::searchsorted.Tensor_out", [seq, values, False, right, None, None, out])
        assert torch.equal(out, aten.searchsorted.Tensor(seq, values, right=right))
    _C.call_kernel("aten::searchsorted.Tensor_out", [torch.empty(0), values, False, False, None,
                                                     None, out])
    assert torch.equal(out, torch.zeros(4, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="side: 'left' contradicts right=True"):
        _C.call_kernel("aten::searchsorted.Tensor_out", [seq, values, False, True, "left", None, out])
    with pytest.raises(RuntimeError, match="sorted_sequence: expected dtype float32, got float64"):
        _C.call_kernel("aten::searchsorted.Tensor_out", [seq.double(), values, False, False, None,
                                                         None, out])
    with pytest.raises(RuntimeError, match="sorter: index 3 is out of range"):
        _C.call_kernel("aten::searchsorted.Tensor_out", [seq, values, False, False, None,
                                                         torch.tensor([0, 1, 3]), out])
    with pytest.raises(RuntimeError, match="same leading dims"):
        _C.call_kernel("aten::searchsorted.Tensor_out", [torch.zeros(2, 3), torch.zeros(3, 1),
                                                         False, False, None, None,
                                                         torch.empty(3, 1, dtype=torch.int64)])
    with pytest.raises(RuntimeError, match="boundaries: expected 1-D"):
        _C.call_kernel("aten::bucketize.Tensor_out", [values, torch.zeros(2, 2), False, False, out])


class Buckets(torch.nn.Module):
    def forward(self, x, edges):
        return torch.bucketize(x, edges, right=True), torch.searchsorted(edges, x, side="left")


def test_bucketize_and_searchsorted_through_the_whole_flow():
    x, edges = sample((3, 7), torch.float32), torch.linspace(-2, 2, 9)
    got = run_program(Buckets(), x, edges)
    want = Buckets()(x, edges)
    assert all(torch.equal(torch.as_tensor(g), w) for g, w in zip(got, want, strict=True))


# --- angle, frexp (non-core; Ember kernels) ----------------------------------

SPECIALS = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40, -3.5, 2.0, 1e30]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8])
def test_angle(dtype):
    if dtype.is_floating_point:
        x = torch.cat([torch.tensor(SPECIALS, dtype=torch.float64).to(dtype),
                       sample((12,), dtype)]).reshape(3, 7)
    else:
        x = sample((3, 7), dtype)
    want = torch.angle(x)
    for xin in (x, x.t().contiguous().t()):
        out = torch.empty_like(want)
        _C.call_kernel("aten::angle.out", [xin, out])
        torch.testing.assert_close(out, want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_frexp(dtype):
    x = torch.cat([torch.tensor(SPECIALS, dtype=torch.float64).to(dtype),
                   sample((12,), dtype) * 1000]).reshape(3, 7)
    want_m, want_e = torch.frexp(x)
    for xin in (x, x.t().contiguous().t()):
        m, e = torch.empty_like(want_m), torch.empty_like(want_e)
        _C.call_kernel("aten::frexp.Tensor_out", [xin, m, e], returns=[1, 2])
        torch.testing.assert_close(m, want_m, rtol=0, atol=0, equal_nan=True)
        assert torch.equal(e, want_e), (e, want_e)
    with pytest.raises(RuntimeError, match="exponent: expected dtype int32"):
        _C.call_kernel("aten::frexp.Tensor_out", [x, torch.empty_like(x),
                                                  torch.empty(x.shape, dtype=torch.int64)],
                       returns=[1, 2])


class AngleFrexp(torch.nn.Module):
    def forward(self, x):
        m, e = torch.frexp(x)
        return torch.angle(x), m, e


def test_angle_and_frexp_through_the_whole_flow():
    x = sample((4, 5), torch.float32) * 100
    got = run_program(AngleFrexp(), x)
    want = AngleFrexp()(x)
    assert all(torch.equal(torch.as_tensor(g), w) for g, w in zip(got, want, strict=True))
