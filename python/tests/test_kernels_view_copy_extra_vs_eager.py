"""narrow_copy, unfold_copy, unbind_copy and histc against PyTorch eager.

Contract as in test_kernels_shape_vs_eager.py (``ember._C.call_kernel``; a
Tensor[] out is passed as a list of arrays, the return slot is appended).
The copies are exact; histc counts are exact (the bin of an element on a bin
edge is where eager puts it).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")
aten = torch.ops.aten

RNG = np.random.default_rng(11)
SIZE_DTYPES = [np.bool_, np.int8, np.float16, np.int32, np.float32, np.int64, np.float64]


def rand(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, size=shape).astype(dtype)
    if dtype.kind in "iu":
        return RNG.integers(-20, 20, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def channels_last(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def same(got: np.ndarray, want: torch.Tensor) -> None:
    w = want.numpy()
    assert got.shape == w.shape and got.dtype == w.dtype
    np.testing.assert_array_equal(got, w)


# --- narrow_copy ----------------------------------------------------------------

NARROWS = [((4, 5), 0, 1, 2), ((4, 5), 1, -3, 3), ((4, 5), -1, 0, 0), ((4, 5), 1, 5, 0),
           ((2, 3, 4, 5), 1, 1, 2), ((0, 3), 1, 1, 1)]


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
@pytest.mark.parametrize("case", NARROWS)
def test_narrow_copy(case, dtype):
    shape, dim, start, length = case
    x = rand(shape, dtype)
    want = aten.narrow_copy.default(torch.from_numpy(x), dim, start, length)
    out = np.empty(tuple(want.shape), x.dtype)
    _C.call_kernel("aten::narrow_copy.out", [x, dim, start, length, out])
    same(out, want)


def test_narrow_copy_channels_last_and_errors():
    x = channels_last(rand((2, 3, 4, 5), np.float32))
    want = aten.narrow_copy.default(torch.from_numpy(x), 3, 1, 3)
    out = np.empty(tuple(want.shape), np.float32)
    _C.call_kernel("aten::narrow_copy.out", [x, 3, 1, 3, out])
    same(out, want)
    y = rand((4, 5), np.float32)
    with pytest.raises(RuntimeError, match="length"):
        _C.call_kernel("aten::narrow_copy.out", [y, 1, 3, 3, np.empty((4, 3), np.float32)])
    with pytest.raises(RuntimeError, match="start"):
        _C.call_kernel("aten::narrow_copy.out", [y, 1, -6, 1, np.empty((4, 1), np.float32)])
    with pytest.raises(RuntimeError, match="0-dim"):
        _C.call_kernel("aten::narrow_copy.out", [np.float32(1.0).reshape(()), 0, 0, 1,
                                                 np.empty((), np.float32)])


# --- unfold_copy ----------------------------------------------------------------

UNFOLDS = [((10,), 0, 3, 2), ((4, 7), 1, 2, 1), ((4, 7), 0, 4, 3), ((4, 7), -1, 7, 5),
           ((2, 3, 6), 2, 0, 2), ((2, 3, 6), 0, 1, 1), ((), 0, 1, 1), ((), -1, 0, 2),
           ((0, 4), 1, 2, 2)]


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
@pytest.mark.parametrize("case", UNFOLDS)
def test_unfold_copy(case, dtype):
    shape, dim, size, step = case
    x = rand(shape, dtype)
    want = aten.unfold_copy.default(torch.from_numpy(x), dim, size, step)
    out = np.empty(tuple(want.shape), x.dtype)
    _C.call_kernel("aten::unfold_copy.out", [x, dim, size, step, out])
    same(out, want)


def test_unfold_copy_channels_last_and_errors():
    x = channels_last(rand((2, 3, 4, 5), np.float32))
    want = aten.unfold_copy.default(torch.from_numpy(x), 1, 2, 1)
    out = np.empty(tuple(want.shape), np.float32)
    _C.call_kernel("aten::unfold_copy.out", [x, 1, 2, 1, out])
    same(out, want)
    y = rand((4, 5), np.float32)
    with pytest.raises(RuntimeError, match="size"):
        _C.call_kernel("aten::unfold_copy.out", [y, 1, 6, 1, np.empty((4, 1, 6), np.float32)])
    with pytest.raises(RuntimeError, match="step"):
        _C.call_kernel("aten::unfold_copy.out", [y, 1, 2, 0, np.empty((4, 4, 2), np.float32)])


# --- unbind_copy ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), 1), ((2, 3, 4), -1), ((1, 0), 0),
                                       ((2, 3, 4, 5), 1)])
def test_unbind_copy(shape, dim, dtype):
    x = rand(shape, dtype)
    if len(shape) == 4:
        x = channels_last(x)
    want = aten.unbind_copy.int(torch.from_numpy(x), dim)
    outs = [np.empty(tuple(w.shape), x.dtype) for w in want]
    _C.call_kernel("aten::unbind_copy.int_out", [x, dim, outs])
    for o, w in zip(outs, want, strict=True):
        same(o, w)


def test_unbind_copy_out_count_is_checked():
    x = rand((3, 4), np.float32)
    with pytest.raises(RuntimeError, match="has 2 tensors"):
        _C.call_kernel("aten::unbind_copy.int_out",
                       [x, 0, [np.empty(4, np.float32), np.empty(4, np.float32)]])


# --- histc --------------------------------------------------------------------


def histc(x: np.ndarray, bins: int, lo: float, hi: float) -> np.ndarray:
    out = np.empty(bins, x.dtype)
    _C.call_kernel("aten::histc.out", [x, bins, lo, hi, out])
    return out


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_histc_edges_and_random_ranges(dtype):
    for _ in range(60):
        bins = int(RNG.integers(1, 40))
        lo = float(dtype(RNG.uniform(-3, 0)))
        hi = float(dtype(lo + RNG.uniform(0.1, 5)))
        edges = np.linspace(lo, hi, bins + 1).astype(dtype)
        x = np.concatenate([RNG.uniform(lo - 1, hi + 1, 64).astype(dtype), edges,
                            np.nextafter(edges, dtype(np.inf)), np.nextafter(edges, dtype(-np.inf)),
                            np.array([np.nan, np.inf, -np.inf], dtype)])
        want = torch.histc(torch.from_numpy(x), bins=bins, min=lo, max=hi)
        same(histc(x, bins, lo, hi), want)


@pytest.mark.parametrize("x", [[1.0, 2.0, 3.0], [2.0, 2.0], [], [5.0], [-1.5, 0.25, 7.0, 7.0]])
def test_histc_range_from_data(x):
    a = np.array(x, np.float32)
    same(histc(a, 4, 0, 0), torch.histc(torch.from_numpy(a), bins=4, min=0, max=0))
    b = channels_last(np.tile(a, 8).reshape(2, 1, 2, -1)) if a.size else a
    same(histc(b, 5, 0, 0), torch.histc(torch.from_numpy(b), bins=5, min=0, max=0))


def test_histc_errors():
    a = np.array([1.0, 2.0], np.float32)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        histc(a, 3, 3.0, 1.0)
    with pytest.raises(RuntimeError, match="bins"):
        _C.call_kernel("aten::histc.out", [a, 0, 0.0, 1.0, np.empty(1, np.float32)])
    with pytest.raises(RuntimeError, match="not finite"):
        histc(np.array([1.0, np.inf], np.float32), 3, 0, 0)
    with pytest.raises(RuntimeError, match="not finite"):
        histc(np.array([1.0, np.nan], np.float32), 3, 0, 0)
    ints = [np.array([1, 2], np.int32), 3, 0, 3, np.empty(3, np.int32)]
    # The op list's dtype set refuses it (as load_method would), and so does the kernel.
    with pytest.raises(RuntimeError, match="self has dtype int32; the kernel computes float16"):
        _C.call_kernel("aten::histc.out", ints)
    with pytest.raises(RuntimeError, match="floating"):
        _C.call_kernel("aten::histc.out", ints, check_dtypes=False)
