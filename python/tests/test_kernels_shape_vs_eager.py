"""Shape, index and data-movement kernels against PyTorch eager.

Same contract as test_kernels_vs_eager.py (``ember._C.call_kernel``: arrays,
ints, floats, bools, None, str, int lists, lists of arrays = Tensor[], lists
with None = Tensor?[]; the return slot is appended as a copy of the last
argument, so a Tensor[] out is passed as the last argument). These kernels
move values without arithmetic (except scatter_add / scatter_reduce /
index_put accumulate), so results are compared exactly unless stated.
bfloat16 is covered by the C++ tests (NumPy has no bfloat16).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

FLOAT_DTYPES = [np.float16, np.float32, np.float64]
INT_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [np.bool_]
# A few dtypes, one per storage size, for ops that move bytes.
SIZE_DTYPES = [np.bool_, np.int8, np.float16, np.int32, np.float32, np.int64, np.float64]

RNG = np.random.default_rng(1)

aten = torch.ops.aten


def rand(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = RNG.integers(0, 2, size=shape)
    elif dtype.kind in "iu":
        values = RNG.integers(0 if dtype.kind == "u" else -20, 20, size=shape)
    else:
        values = RNG.standard_normal(shape)
    return np.asarray(values).astype(dtype)


def channels_last(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def transposed(x: np.ndarray) -> np.ndarray:
    """Same logical values, last two dims swapped in memory."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)


def t(x: np.ndarray) -> torch.Tensor:
    # torch.from_numpy keeps the strides, so eager sees the same layout.
    return torch.from_numpy(x)


def out_like(want: torch.Tensor) -> np.ndarray:
    return np.empty(tuple(want.shape), dtype=want.numpy().dtype)


def check(got: np.ndarray, want: torch.Tensor, tol: float | None = None) -> None:
    want_np = want.contiguous().numpy()
    assert got.shape == want_np.shape
    assert got.dtype == want_np.dtype, (got.dtype, want_np.dtype)
    if tol is None:
        np.testing.assert_array_equal(got, want_np)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want_np.astype(np.float64),
                                   atol=tol, rtol=tol)


def run(name: str, args: list, want: torch.Tensor, tol: float | None = None) -> None:
    out = out_like(want)
    _C.call_kernel(name, [*args, out])
    check(out, want, tol)


def layouts(x: np.ndarray) -> list[np.ndarray]:
    """x, plus a non-contiguous twin when it has >= 2 dims."""
    if x.ndim == 4:
        return [x, channels_last(x)]
    if x.ndim >= 2:
        return [x, transposed(x)]
    return [x]


# --- slicing and selecting ------------------------------------------------------

SLICES = [  # dim, start, end, step
    (0, None, None, 1),
    (1, 1, None, 2),
    (-1, -3, -1, 1),
    (2, None, 2, 3),
    (1, 5, 2, 1),      # empty
    (0, -100, 100, 1),  # clamped
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("spec", SLICES)
def test_slice_copy(spec, dtype):
    for x in layouts(rand((2, 4, 5, 3), dtype)):
        want = aten.slice_copy.Tensor(t(x), *spec)
        run("aten::slice_copy.Tensor_out", [x, *spec], want)


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
@pytest.mark.parametrize("spec", SLICES)
def test_slice_scatter(spec, dtype):
    for x in layouts(rand((2, 4, 5, 3), dtype)):
        shape = tuple(aten.slice_copy.Tensor(t(x), *spec).shape)
        src = rand(shape, dtype)
        want = aten.slice_scatter(t(x), t(src), *spec)
        run("aten::slice_scatter.out", [x, src, *spec], want)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim_index", [(0, 1), (1, -1), (-1, 0), (-2, 2)])
def test_select_copy_and_scatter(dim_index, dtype):
    for x in layouts(rand((2, 3, 4, 5), dtype)):
        want = aten.select_copy.int(t(x), *dim_index)
        run("aten::select_copy.int_out", [x, *dim_index], want)
        src = rand(tuple(want.shape), dtype)
        want = aten.select_scatter(t(x), t(src), *dim_index)
        run("aten::select_scatter.out", [x, src, *dim_index], want)


def test_select_out_of_range():
    x = rand((2, 3), np.float32)
    with pytest.raises(_C.EmberError, match=r"select_copy.*index: 3 out of range"):
        _C.call_kernel("aten::select_copy.int_out", [x, 1, 3, np.empty((2,), np.float32)])


def test_slice_zero_step():
    x = rand((4,), np.float32)
    with pytest.raises(_C.EmberError, match="step: must be positive"):
        _C.call_kernel("aten::slice_copy.Tensor_out", [x, 0, None, None, 0,
                                                       np.empty((4,), np.float32)])


# --- cat and split -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim, dtype):
    base = [rand((2, 3, 4), dtype) for _ in range(3)]
    parts = []
    for k, b in enumerate(base):
        shape = list(b.shape)
        shape[dim] = k + 1 if k != 1 else 0  # One empty part.
        parts.append(rand(tuple(shape), dtype))
    parts[2] = transposed(parts[2])
    want = torch.cat([t(p) for p in parts], dim)
    run("aten::cat.out", [parts, dim], want)


def test_cat_promotes_and_skips_legacy_empty():
    a, b = rand((2, 2), np.int32), rand((1, 2), np.float32)
    empty = np.zeros((0,), np.float64)
    want = torch.cat([t(a), t(empty), t(b)], 0)
    run("aten::cat.out", [[a, empty, b], 0], want)


def test_cat_errors():
    a, b = rand((2, 2), np.float32), rand((2, 3), np.float32)
    with pytest.raises(_C.EmberError, match=r"cat.*entry 1 has shape \[2, 3\]"):
        _C.call_kernel("aten::cat.out", [[a, b], 0, np.empty((4, 2), np.float32)])
    with pytest.raises(_C.EmberError, match="float64 to int32|cast"):
        _C.call_kernel("aten::cat.out", [[a, a], 0, np.empty((4, 2), np.int32)])


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
@pytest.mark.parametrize("sizes_dim", [([1, 2, 1], 1), ([3, 0, 1], -1), ([2], 0)])
def test_split_with_sizes_copy(sizes_dim, dtype):
    sizes, dim = sizes_dim
    shape = [2, 4, 4]
    shape[dim] = sum(sizes)
    for x in layouts(rand(tuple(shape), dtype)):
        want = aten.split_with_sizes_copy(t(x), sizes, dim)
        outs = [out_like(w) for w in want]
        _C.call_kernel("aten::split_with_sizes_copy.out", [x, sizes, dim, outs])
        for o, w in zip(outs, want, strict=True):
            check(o, w)


def test_split_with_sizes_bad_sum():
    x = rand((4, 2), np.float32)
    outs = [np.empty((1, 2), np.float32), np.empty((2, 2), np.float32)]
    with pytest.raises(_C.EmberError, match=r"split_sizes: \[1, 2\] sums to 3"):
        _C.call_kernel("aten::split_with_sizes_copy.out", [x, [1, 2], 0, outs])


# --- reshapes ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SIZE_DTYPES)
def test_squeeze_unsqueeze_alias(dtype):
    x = rand((1, 3, 1, 2), dtype)
    for xl in layouts(x):
        for dim in [0, 1, 2, -2, -4]:
            run("aten::squeeze_copy.dim_out", [xl, dim], aten.squeeze_copy.dim(t(xl), dim))
        for dims in [[0, 2], [-1, 0], [], [1]]:
            run("aten::squeeze_copy.dims_out", [xl, dims], aten.squeeze_copy.dims(t(xl), dims))
        for dim in [0, 2, 4, -1, -5]:
            run("aten::unsqueeze_copy.out", [xl, dim], aten.unsqueeze_copy(t(xl), dim))
        run("aten::alias_copy.out", [xl], aten.alias_copy(t(xl)))
    s = rand((), dtype)
    run("aten::squeeze_copy.dim_out", [s, 0], aten.squeeze_copy.dim(t(s), 0))
    run("aten::unsqueeze_copy.out", [s, -1], aten.unsqueeze_copy(t(s), -1))
    e = rand((0, 1), dtype)
    run("aten::squeeze_copy.dims_out", [e, [0, 1]], aten.squeeze_copy.dims(t(e), [0, 1]))


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
def test_as_strided_diagonal_flip(dtype):
    x = rand((3, 4, 5), dtype)
    run("aten::as_strided_copy.out", [x, [2, 3], [5, 2], 1],
        aten.as_strided_copy(t(x), [2, 3], [5, 2], 1))
    run("aten::as_strided_copy.out", [x, [4, 4], [1, 4], None],
        aten.as_strided_copy(t(x), [4, 4], [1, 4]))
    for xl in layouts(x):
        for args in [(0, 0, 1), (1, 0, 1), (-2, -1, 0), (2, 1, 2), (9, 0, 1)]:
            run("aten::diagonal_copy.out", [xl, *args], aten.diagonal_copy(t(xl), *args))
        for dims in [[0], [-1, 1], [], [0, 1, 2]]:
            run("aten::flip.out", [xl, dims], aten.flip(t(xl), dims))


def test_as_strided_out_of_bounds():
    x = rand((2, 3), np.float32)
    with pytest.raises(_C.EmberError, match="outside self's 6 elements"):
        _C.call_kernel("aten::as_strided_copy.out", [x, [3, 3], [3, 1], 0,
                                                     np.empty((3, 3), np.float32)])


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
@pytest.mark.parametrize("case", [((2, 3), [2, 2]), ((2, 3), [3, 1, 2]), ((3,), [2, 1, 1]),
                                  ((2, 1, 3), [1, 4, 1]), ((2, 3), [0, 1]), ((), [2, 3])])
def test_repeat(case, dtype):
    shape, repeats = case
    for x in layouts(rand(shape, dtype)):
        run("aten::repeat.out", [x, repeats], aten.repeat(t(x), repeats))


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float32, np.int64),
                                    (np.int32, np.float16), (np.bool_, np.float64),
                                    (np.uint8, np.bool_)])
def test_copy(dtypes):
    x = rand((2, 3, 4), dtypes[0])
    full = rand((2, 3, 4), dtypes[1])
    for src in [full, rand((3, 1), dtypes[1]), transposed(full)]:
        run("aten::copy.out", [x, src, False], aten.copy(t(x), t(src)))


# --- padding -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("pad", [[1, 2], [0, 0, 2, 1], [0, 1, 0, 1], [-1, 2, 1, -2],
                                 [1, 1, 1, 1, 1, 1], []])
def test_constant_pad_nd(pad, dtype):
    value = True if dtype == np.bool_ else (3 if np.dtype(dtype).kind in "iu" else 1.5)
    for x in layouts(rand((2, 3, 4), dtype)):
        run("aten::constant_pad_nd.out", [x, pad, value], aten.constant_pad_nd(t(x), pad, value))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.uint8])
@pytest.mark.parametrize("mode", ["reflection", "replication"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("batched", [False, True])
def test_reflection_replication_pad(nd, mode, dtype, batched):
    shape = (2, 3) + (4, 5, 3)[:nd] if batched else (3,) + (4, 5, 3)[:nd]
    padding = [2, 1, 0, 3, 1, 2][:2 * nd]
    if mode == "reflection":
        padding = [min(p, 2) for p in padding]
    for x in layouts(rand(shape, dtype)):
        op = getattr(aten, f"{mode}_pad{nd}d")
        try:
            want = op(t(x), padding)
        except (RuntimeError, NotImplementedError):
            pytest.skip(f"eager {mode}_pad{nd}d does not support {np.dtype(dtype)}")
        run(f"aten::{mode}_pad{nd}d.out", [x, padding], want)


def test_pad_errors():
    x = rand((1, 2, 3), np.float32)
    with pytest.raises(_C.EmberError, match="reflection_pad1d.*smaller than"):
        _C.call_kernel("aten::reflection_pad1d.out", [x, [3, 0], np.empty((1, 2, 6), np.float32)])
    with pytest.raises(_C.EmberError, match="constant_pad_nd.*even length"):
        _C.call_kernel("aten::constant_pad_nd.out", [x, [1], 0, np.empty((1, 2, 4), np.float32)])


# --- gather / scatter ------------------------------------------------------------------

def index_for(shape, size, dtype=np.int64):
    return RNG.integers(0, size, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_and_scatter(dim, dtype):
    for x in layouts(rand((3, 4, 5), dtype)):
        ishape = [2, 3, 4]
        ishape[dim] = 6
        index = index_for(tuple(ishape), x.shape[dim])
        run("aten::gather.out", [x, dim, index, False], aten.gather(t(x), dim, t(index)))
        src = rand(tuple(s + 1 for s in ishape), dtype)  # May be larger than index.
        run("aten::scatter.src_out", [x, dim, index, src],
            aten.scatter.src(t(x), dim, t(index), t(src)))
        value = True if dtype == np.bool_ else 7
        run("aten::scatter.value_out", [x, dim, index, value],
            aten.scatter.value(t(x), dim, t(index), value))
        tol = 1e-2 if dtype == np.float16 else (1e-5 if np.dtype(dtype).kind == "f" else None)
        run("aten::scatter_add.out", [x, dim, index, src],
            aten.scatter_add(t(x), dim, t(index), t(src)), tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64,
                                   np.uint8])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self, dtype):
    x = rand((4, 5), dtype)
    index = index_for((6, 5), 4)
    src = rand((6, 5), dtype)
    if np.dtype(dtype).kind == "f":
        src[0, 0] = np.nan
    want = aten.scatter_reduce.two(t(x), 0, t(index), t(src), reduce, include_self=include_self)
    tol = 1e-2 if dtype == np.float16 else (1e-5 if np.dtype(dtype).kind == "f" else None)
    out = out_like(want)
    _C.call_kernel("aten::scatter_reduce.two_out", [x, 0, index, src, reduce, include_self, out])
    if tol is None:
        check(out, want)
    else:
        np.testing.assert_allclose(out.astype(np.float64), want.numpy().astype(np.float64),
                                   atol=tol, rtol=tol, equal_nan=True)


def test_scatter_reduce_mean_many_targets():
    # More targets than one counting block (256) along the dim.
    x = rand((600, 2), np.float32)
    index = index_for((900, 2), 600)
    src = rand((900, 2), np.float32)
    want = aten.scatter_reduce.two(t(x), 0, t(index), t(src), "mean", include_self=False)
    out = out_like(want)
    _C.call_kernel("aten::scatter_reduce.two_out", [x, 0, index, src, "mean", False, out])
    np.testing.assert_allclose(out, want.numpy(), rtol=1e-5, atol=1e-5)


def test_gather_scatter_errors():
    x = rand((3, 4), np.float32)
    bad = np.array([[0, 5]], np.int64)
    with pytest.raises(_C.EmberError,
                       match=r"gather.*index 5 is out of bounds for dim 1 with size 4"):
        _C.call_kernel("aten::gather.out", [x, 1, bad, False, np.empty((1, 2), np.float32)])
    with pytest.raises(_C.EmberError, match=r"scatter.*index -1 is out of bounds"):
        _C.call_kernel("aten::scatter.value_out", [x, 0, np.array([[-1]]), 1.0,
                                                   np.empty((3, 4), np.float32)])
    with pytest.raises(_C.EmberError, match="reduce: 'max' is not one of"):
        _C.call_kernel("aten::scatter_reduce.two_out", [x, 0, np.array([[0]]), x, "max", True,
                                                        np.empty((3, 4), np.float32)])
    with pytest.raises(_C.EmberError, match="index: expected dtype int64 or int32"):
        _C.call_kernel("aten::gather.out", [x, 0, np.zeros((1, 1), np.float32), False,
                                            np.empty((1, 1), np.float32)])


# --- advanced indexing -------------------------------------------------------------------

INDEX_CASES = [
    lambda: [np.array([2, 0, -1])],
    lambda: [None, np.array([[1, 0], [3, 3]])],
    lambda: [np.array([0, 1]), None, np.array([4, 0])],      # non-adjacent: block first
    lambda: [None, np.array([[1], [2]]), np.array([0, 4, 1])],  # adjacent, broadcast
    lambda: [RNG.integers(0, 2, size=(3, 4)).astype(np.bool_)],
    lambda: [None, None, np.array([True, False, True, True, False])],
    lambda: [np.array([1, 2], np.int32), np.array([True, False, False, True])],
    lambda: [np.zeros((0,), np.int64)],
]


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
@pytest.mark.parametrize("case", range(len(INDEX_CASES)))
def test_index(case, dtype):
    x = rand((3, 4, 5), dtype)
    indices = INDEX_CASES[case]()
    tind = [None if i is None else t(i) for i in indices]
    try:
        want = aten.index.Tensor(t(x), tind)
    except (IndexError, RuntimeError):
        pytest.skip("eager rejects this combination")
    for xl in layouts(x):
        run("aten::index.Tensor_out", [xl, indices], want)
        values = rand(tuple(want.shape), dtype)
        for accumulate in [False, True]:
            if accumulate and any(i is not None and i.dtype != np.bool_ and
                                  len(np.unique(i)) != i.size for i in indices):
                continue  # Duplicates without accumulate: last write wins in both.
            want_put = aten.index_put(t(xl), tind, t(values), accumulate)
            run("aten::index_put.out", [xl, indices, values, accumulate], want_put,
                1e-2 if dtype == np.float16 else None)
        scalar_values = rand((), dtype)
        run("aten::index_put.out", [xl, indices, scalar_values, False],
            aten.index_put(t(xl), tind, t(scalar_values), False))


def test_index_put_accumulates_duplicates():
    x = np.zeros((4,), np.float32)
    idx = np.array([1, 1, 3, 1])
    vals = np.array([1, 2, 3, 4], np.float32)
    run("aten::index_put.out", [x, [idx], vals, True],
        aten.index_put(t(x), [t(idx)], t(vals), True))


def test_index_errors():
    x = rand((3, 4), np.float32)
    with pytest.raises(_C.EmberError,
                       match=r"index.*index 3 is out of bounds for dim 0 with size 3"):
        _C.call_kernel("aten::index.Tensor_out", [x, [np.array([3])], np.empty((1, 4), np.float32)])
    with pytest.raises(_C.EmberError, match="too many indices"):
        _C.call_kernel("aten::index.Tensor_out", [x, [None, None, np.array([0])],
                                                  np.empty((1,), np.float32)])
    with pytest.raises(_C.EmberError, match="does not match self"):
        _C.call_kernel("aten::index.Tensor_out", [x, [np.ones((2,), np.bool_)],
                                                  np.empty((2, 4), np.float32)])


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_index_select(dim, index_dtype, dtype):
    for x in layouts(rand((3, 4, 5), dtype)):
        index = index_for((7,), x.shape[dim], index_dtype)
        run("aten::index_select.out", [x, dim, index], aten.index_select(t(x), dim, t(index)))
        empty = np.zeros((0,), index_dtype)
        run("aten::index_select.out", [x, dim, empty], aten.index_select(t(x), dim, t(empty)))


def test_index_select_out_of_range():
    x = rand((3, 4), np.float32)
    with pytest.raises(_C.EmberError, match=r"index_select.*index -1 is out of bounds for dim 1"):
        _C.call_kernel("aten::index_select.out",
                       [x, 1, np.array([-1]), np.empty((3, 1), np.float32)])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int64])
@pytest.mark.parametrize("ishape", [(5,), (2, 3), (), (0, 2)])
def test_embedding(ishape, dtype):
    w = rand((6, 4), dtype)
    idx = index_for(ishape, 6)
    for wl in layouts(w):
        run("aten::embedding.out", [wl, idx, -1, False, False], aten.embedding(t(wl), t(idx)))
    with pytest.raises(_C.EmberError, match="embedding.*index 6 is out of bounds"):
        _C.call_kernel("aten::embedding.out", [w, np.array([6]), -1, False, False,
                                               np.empty((1, 4), dtype)])


@pytest.mark.parametrize("dtype", SIZE_DTYPES)
def test_masked_scatter(dtype):
    for x in layouts(rand((3, 4), dtype)):
        for mshape in [(3, 4), (4,), (3, 1)]:
            mask = rand(mshape, np.bool_)
            source = rand((4, 5), dtype)
            run("aten::masked_scatter.out", [x, mask, source],
                aten.masked_scatter(t(x), t(mask), t(source)))
    with pytest.raises(_C.EmberError, match="source: has 1 elements but mask selects 12"):
        _C.call_kernel("aten::masked_scatter.out", [x, np.ones((3, 4), np.bool_),
                                                    np.zeros((1,), dtype), np.empty((3, 4), dtype)])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2), (), (0, 3), (5,)])
def test_nonzero(shape, dtype):
    for x in layouts(rand(shape, dtype)):
        run("aten::nonzero.out", [x], aten.nonzero(t(x)))


def test_nonzero_static_out_too_small():
    x = np.ones((3,), np.float32)
    with pytest.raises(_C.EmberError,
                       match=r"nonzero.*out: has shape \[2, 1\] but the result has shape \[3, 1\]"):
        _C.call_kernel("aten::nonzero.out", [x, np.empty((2, 1), np.int64)])


# --- factories -----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(0, 10, 1), (2, 11, 3), (10, 0, -2), (0.5, 3.2, 0.7),
                                  (-1.0, 1.0, 0.25), (5, 5, 1), (0, 1, 0.1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.float16, torch.int8])
def test_arange(args, dtype):
    try:
        want = torch.arange(*args, dtype=dtype)
    except (RuntimeError, ValueError):  # int64 with a fractional step: "step must be nonzero".
        pytest.skip("eager rejects these arguments for this dtype")
    run("aten::arange.start_out", list(args), want, 1e-3 if dtype == torch.float16 else None)


def test_arange_errors():
    with pytest.raises(_C.EmberError, match="step: must be nonzero"):
        _C.call_kernel("aten::arange.start_out", [0, 3, 0, np.empty((3,), np.int64)])
    with pytest.raises(_C.EmberError, match="wrong side"):
        _C.call_kernel("aten::arange.start_out", [0, 3, -1, np.empty((3,), np.int64)])


def test_empty_sizes_out():
    out = np.empty((2, 3), np.float32)
    _C.call_kernel("aten::empty.out", [[2, 3], None, out])
    _C.call_kernel("aten::empty_strided.out", [[2, 3], [3, 1], out])
    with pytest.raises(_C.EmberError, match="empty.out.*static shape"):
        _C.call_kernel("aten::empty.out", [[3, 3], None, out])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rand_statistics(dtype):
    out = np.empty((300, 100), dtype)
    _C.call_kernel("aten::rand.out", [[300, 100], out])
    assert out.min() >= 0 and out.max() < 1
    assert abs(out.astype(np.float64).mean() - 0.5) < 0.01
    assert abs(out.astype(np.float64).var() - 1 / 12) < 0.005


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32, np.uint8])
def test_randperm(dtype):
    for n in [0, 1, 7, 200]:
        out = np.empty((n,), dtype)
        _C.call_kernel("aten::randperm.out", [n, out])
        np.testing.assert_array_equal(np.sort(out), np.arange(n, dtype=dtype))
    with pytest.raises(_C.EmberError, match="too large"):
        _C.call_kernel("aten::randperm.out", [300, np.empty((300,), np.uint8)])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_native_dropout(dtype):
    x = rand((50, 40), dtype)
    out, mask = np.empty_like(x), np.empty(x.shape, np.bool_)
    _C.call_kernel("aten::native_dropout.out", [x, 0.3, False, out, mask], returns=[3, 4])
    want, want_mask = aten.native_dropout(t(x), 0.3, False)
    check(out, want)
    check(mask, want_mask)
    _C.call_kernel("aten::native_dropout.out", [x, 0.25, True, out, mask], returns=[3, 4])
    assert abs(mask.mean() - 0.75) < 0.05
    tol = 1e-2 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(out.astype(np.float64),
                               np.where(mask, x.astype(np.float64) / 0.75, 0), rtol=tol, atol=tol)
