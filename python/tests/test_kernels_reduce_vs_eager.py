"""Reduction, normalization, pooling, resampling and sorting kernels against eager.

Same contract as ``test_kernels_vs_eager.py``: inputs are NumPy arrays, the
kernel runs through ``ember._C.call_kernel`` (out arrays written in place),
and the result is compared with the eager ATen op. Multi-out ops pass
``returns=[...]``: the indices of the outs that form the TensorList return
slot, as the emitter builds it. bfloat16 is covered by the C++ tests only
(NumPy has no bfloat16).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

aten = torch.ops.aten

# Absolute and relative tolerance per dtype, for every test in this file.
# Strided float32 reductions accumulate in float64 and eager in float32, so
# results differ by eager's rounding (contiguous rows of sum/mean are
# bit-identical: test_reduction_order.py); 16-bit floats differ by one rounding.
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-5, 1e-5),
    np.dtype(np.float64): (1e-10, 1e-10),
}

FLOAT_DTYPES = [np.float16, np.float32, np.float64]
INT_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [np.bool_]
DTYPE_CODE = {np.dtype(np.int64): 4, np.dtype(np.float32): 6, np.dtype(np.float64): 7}

RNG = np.random.default_rng(1)


def rand(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = RNG.integers(0, 2, size=shape)
    elif dtype.kind in "iu":
        values = RNG.integers(0 if dtype.kind == "u" else -20, 20, size=shape)
    else:
        values = RNG.standard_normal(shape)
    return np.asarray(values).astype(dtype)


def distinct(shape, dtype) -> np.ndarray:
    """A permutation of 0..n-1 (scaled for floats): no ties, so indices are unique."""
    n = int(np.prod(shape))
    values = RNG.permutation(n).reshape(shape)
    if np.dtype(dtype).kind == "f":
        values = values * 0.25 - n / 8
    return values.astype(dtype)


def channels_last(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def transposed(x: np.ndarray) -> np.ndarray:
    """Same logical values, last two dims swapped in memory."""
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return np.ascontiguousarray(x.transpose(axes)).transpose(axes)


LAYOUTS = {"contiguous": lambda x: x, "transposed": transposed}


def t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(x, order="C"))


def empty_for(want: torch.Tensor) -> np.ndarray:
    return np.empty(tuple(want.shape), dtype=want.numpy().dtype)


def check(got: np.ndarray, want: torch.Tensor) -> None:
    want_np = want.numpy()
    assert got.shape == want_np.shape, (got.shape, want_np.shape)
    assert got.dtype == want_np.dtype, (got.dtype, want_np.dtype)
    if got.dtype in TOLERANCES:
        atol, rtol = TOLERANCES[got.dtype]
        np.testing.assert_allclose(got.astype(np.float64), want_np.astype(np.float64),
                                   atol=atol, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want_np)


# --- sum / mean / prod -------------------------------------------------------

REDUCE_CASES = [
    ((2, 3, 4), [1]),
    ((2, 3, 4), [-1]),
    ((2, 3, 4), [0, 2]),
    ((2, 3, 4), None),
    ((5, 7), [0]),
    ((3, 0, 2), [1]),
    ((3, 0, 2), [2]),
    ((4,), [0]),
    ((), None),
    ((2, 130, 3), [1]),
]


@pytest.mark.parametrize("shape,dim", REDUCE_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sum(shape, dim, keepdim, dtype):
    x = rand(shape, dtype)
    want = aten.sum.dim_IntList(t(x), dim, keepdim)
    out = empty_for(want)
    _C.call_kernel("aten::sum.IntList_out", [x, dim, keepdim, None, out])
    check(out, want)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_sum_default_and_dtype(dtype):
    x = rand((3, 4), dtype)
    want = aten.sum.default(t(x))
    out = empty_for(want)
    _C.call_kernel("aten::sum.out", [x, None, out])
    check(out, want)
    want = aten.sum.dim_IntList(t(x), [0], False, dtype=torch.float64)
    out = empty_for(want)
    _C.call_kernel("aten::sum.IntList_out", [x, [0], False, ("dtype", 7), out])
    check(out, want)


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
@pytest.mark.parametrize("dim", [[1], [2, 3], [0, 1], None])
def test_sum_mean_non_contiguous(layout, dim):
    x = rand((2, 3, 4, 5), np.float32)
    xl = channels_last(x) if layout == "channels_last" else transposed(x)
    for name, op in [("sum.IntList_out", aten.sum.dim_IntList), ("mean.out", aten.mean.dim)]:
        want = op(t(x), dim, True)
        out = empty_for(want)
        _C.call_kernel(f"aten::{name}", [xl, dim, True, None, out])
        check(out, want)


@pytest.mark.parametrize("shape,dim", REDUCE_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mean(shape, dim, keepdim, dtype):
    x = rand(shape, dtype)
    want = aten.mean.dim(t(x), dim, keepdim)
    out = empty_for(want)
    _C.call_kernel("aten::mean.out", [x, dim, keepdim, None, out])
    check(out, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mean_default(dtype):
    x = rand((3, 5), dtype)
    want = aten.mean.default(t(x))
    out = empty_for(want)
    _C.call_kernel("aten::mean.dtype_out", [x, None, out])
    check(out, want)


@pytest.mark.parametrize("shape,dim", [((2, 3, 4), 1), ((2, 3, 4), -1), ((3, 0), 0), ((5,), 0)])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_prod(shape, dim, keepdim, dtype):
    x = rand(shape, dtype)
    if x.dtype.kind == "f":
        x = (x * 0.5 + 1).astype(dtype)
    elif x.dtype.kind in "iu":
        x = (x % 3).astype(dtype)
    want = aten.prod.dim_int(t(x), dim, keepdim)
    out = empty_for(want)
    _C.call_kernel("aten::prod.int_out", [x, dim, keepdim, None, out])
    check(out, want)
    want = aten.prod.default(t(x))
    out = empty_for(want)
    _C.call_kernel("aten::prod.out", [x, None, out])
    check(out, want)


# --- amax / amin / max / min / any -----------------------------------------


@pytest.mark.parametrize("shape,dim", [((2, 3, 4), [1]), ((2, 3, 4), [0, -1]), ((2, 3, 4), []),
                                       ((3, 0, 2), [2]), ((6,), [0])])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_amax_amin(op, shape, dim, keepdim, dtype):
    x = rand(shape, dtype)
    want = getattr(aten, op).default(t(x), dim, keepdim)
    out = empty_for(want)
    _C.call_kernel(f"aten::{op}.out", [x, dim, keepdim, out])
    check(out, want)


def test_amax_nan_and_empty_error():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    out = np.empty(2, dtype=np.float32)
    _C.call_kernel("aten::amax.out", [x, [1], False, out])
    check(out, aten.amax.default(t(x), [1]))
    with pytest.raises(Exception, match="non-zero size"):
        _C.call_kernel("aten::amax.out", [np.zeros((0, 3), np.float32), [0], False,
                                          np.empty(3, np.float32)])
    with pytest.raises(IndexError):  # Eager fails the same way.
        aten.amax.default(torch.zeros(0, 3), [0])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_unary(op, dtype):
    x = rand((4, 5), dtype)
    want = getattr(aten, op).default(t(x))
    out = empty_for(want)
    _C.call_kernel(f"aten::{op}.unary_out", [x, out])
    check(out, want)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_any(dtype, keepdim):
    x = rand((3, 4, 2), dtype)
    x[0] = 0
    want = aten.any.dim(t(x), 1, keepdim)
    out = empty_for(want)
    _C.call_kernel("aten::any.out", [x, 1, keepdim, out])
    check(out, want)
    want = aten.any.dims(t(x), [0, 2], keepdim)
    out = empty_for(want)
    _C.call_kernel("aten::any.dims_out", [x, [0, 2], keepdim, out])
    check(out, want)
    want = aten.any.default(t(x))
    out = empty_for(want)
    _C.call_kernel("aten::any.all_out", [x, out])
    check(out, want)


# --- argmax / argmin / max.dim / min.dim -------------------------------------


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_argmax_argmin(op, dtype, dim, keepdim, layout):
    x = distinct((4, 6), dtype) if np.dtype(dtype).itemsize > 1 else rand((4, 6), dtype)
    want = getattr(aten, op).default(t(x), dim, keepdim)
    out = empty_for(want)
    _C.call_kernel(f"aten::{op}.out", [LAYOUTS[layout](x), dim, keepdim, out])
    check(out, want)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_dim(op, dtype, dim, keepdim):
    x = distinct((3, 5, 4), dtype) if dtype not in (np.bool_, np.uint8, np.int8) else rand(
        (3, 5, 4), dtype)
    values, indices = getattr(aten, op).dim(t(x), dim, keepdim)
    out_v, out_i = empty_for(values), empty_for(indices)
    _C.call_kernel(f"aten::{op}.dim_{op}", [x, dim, keepdim, out_v, out_i], returns=[3, 4])
    check(out_v, values)
    check(out_i, indices)


# --- var / cumsum ------------------------------------------------------------


@pytest.mark.parametrize("shape,dim", [((3, 4), [1]), ((3, 4), None), ((2, 3, 4), [0, 2]),
                                       ((1, 5), [0]), ((0, 3), [0])])
@pytest.mark.parametrize("correction", [None, 0, 1, 2.5])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_var(shape, dim, correction, keepdim, dtype):
    x = rand(shape, dtype)
    want = aten.var.correction(t(x), dim, correction=correction, keepdim=keepdim)
    out = empty_for(want)
    _C.call_kernel("aten::var.correction_out", [x, dim, correction, keepdim, out])
    check(out, want)


@pytest.mark.parametrize("unbiased", [False, True])
def test_var_dim(unbiased):
    x = rand((4, 6), np.float64)
    want = aten.var.dim(t(x), [1], unbiased, False)
    out = empty_for(want)
    _C.call_kernel("aten::var.out", [x, [1], unbiased, False, out])
    check(out, want)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumsum_cumprod(op, dim, dtype, layout):
    x = rand((3, 5), dtype)
    want = getattr(aten, op).default(t(x), dim)
    out = empty_for(want)
    _C.call_kernel(f"aten::{op}.out", [LAYOUTS[layout](x), dim, None, out])
    check(out, want)


def test_cumprod_wraps_integers_and_takes_a_dtype():
    x = np.array([200, 3, 100, 7], np.int64) ** 4
    want = aten.cumprod.default(t(x), 0)  # int64 wrap-around, as eager
    out = empty_for(want)
    _C.call_kernel("aten::cumprod.out", [x, 0, None, out])
    check(out, want)
    y = rand((4,), np.int32)
    want = aten.cumprod.default(t(y), 0, dtype=torch.float64)
    out = empty_for(want)
    _C.call_kernel("aten::cumprod.out", [y, 0, ("dtype", 7), out])
    check(out, want)


def test_cumsum_dtype_and_empty():
    x = rand((4,), np.int32)
    want = aten.cumsum.default(t(x), 0, dtype=torch.float32)
    out = empty_for(want)
    _C.call_kernel("aten::cumsum.out", [x, 0, ("dtype", 6), out])
    check(out, want)
    e = np.zeros((0, 3), np.float32)
    out = np.empty((0, 3), np.float32)
    _C.call_kernel("aten::cumsum.out", [e, 1, None, out])


# --- softmax / log_softmax ---------------------------------------------------


@pytest.mark.parametrize("shape,dim", [((2, 5), 1), ((2, 5), 0), ((2, 3, 4, 5), 1),
                                       ((2, 3, 4, 5), -1), ((7,), 0), ((), 0), ((0, 3), 1)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["_softmax", "_log_softmax"])
def test_softmax(op, shape, dim, dtype):
    x = np.asarray(rand(shape, np.float64) * 4).astype(dtype)
    want = getattr(aten, op).default(t(x), dim, False)
    out = empty_for(want)
    _C.call_kernel(f"aten::{op}.out", [x, dim, False, out])
    check(out, want)


@pytest.mark.parametrize("dim", [1, 3])
@pytest.mark.parametrize("op", ["_softmax", "_log_softmax"])
def test_softmax_channels_last_and_large(op, dim):
    x = (rand((2, 3, 4, 5), np.float32) * 100).astype(np.float32)
    want = getattr(aten, op).default(t(x), dim, False)
    out = channels_last(np.empty((2, 3, 4, 5), np.float32))
    _C.call_kernel(f"aten::{op}.out", [channels_last(x), dim, False, out])
    check(out, want)


def softmax_special_input(shape, dim) -> np.ndarray:
    """Uniform values with, along `dim`: one slice partly -inf, one all -inf
    (NaN out), one with a NaN, one with +inf (NaN out) and one of huge values
    (finite only if the max is subtracted first)."""
    x = np.moveaxis((rand(shape, np.float64) * 20).astype(np.float32), dim, -1).copy()
    flat = x.reshape(-1, x.shape[-1])
    flat[0, ::2] = -np.inf
    flat[1, :] = -np.inf
    flat[2, flat.shape[1] // 2] = np.nan
    flat[3, 0] = np.inf
    flat[4, :] = 1e30 + np.arange(flat.shape[1], dtype=np.float32) * 1e24
    return np.ascontiguousarray(np.moveaxis(flat.reshape(x.shape), -1, dim))


# Rows longer than a vector, column blocks (dim not last) narrower than, equal
# to and wider than the 64-column block of softmax_f32, and dim 0.
@pytest.mark.parametrize("shape,dim", [((6, 1000), -1), ((5, 37), 1), ((6, 17), 0),
                                       ((2, 9, 64), 1), ((2, 7, 130), 1), ((3, 5, 2, 33), 1)])
@pytest.mark.parametrize("op", ["_softmax", "_log_softmax"])
def test_softmax_float32_special_values_and_blocks(op, shape, dim):
    x = softmax_special_input(shape, dim)
    want = getattr(aten, op).default(t(x), dim, False)
    out = np.empty(shape, np.float32)
    _C.call_kernel(f"aten::{op}.out", [x, dim, False, out])
    check(out, want)


@pytest.mark.parametrize("op", ["_softmax", "_log_softmax"])
def test_softmax_float32_mixed_layouts(op):
    # Contiguous self, channels-last out: the per-element (strided) path.
    x = (rand((2, 3, 4, 5), np.float32) * 10).astype(np.float32)
    for dim in (1, 3):
        want = getattr(aten, op).default(t(x), dim, False)
        out = channels_last(np.empty((2, 3, 4, 5), np.float32))
        _C.call_kernel(f"aten::{op}.out", [x, dim, False, out])
        check(out, want)


# ember_fused::safe_softmax: aten._safe_softmax (all -inf slices give zeros)
# over the same special values and blocks, and in channels-last.
@pytest.mark.parametrize("shape,dim", [((6, 1000), -1), ((5, 37), 1), ((6, 17), 0),
                                       ((2, 9, 64), 1), ((2, 7, 130), 1), ((3, 5, 2, 33), 1),
                                       ((7,), 0), ((0, 3), 1)])
def test_safe_softmax_float32_special_values_and_blocks(shape, dim):
    slices = int(np.prod(shape)) // shape[dim] if shape[dim] else 0
    special = slices >= 5
    x = softmax_special_input(shape, dim) if special else rand(shape, np.float32)
    want = aten._safe_softmax.default(t(x), dim)
    out = np.empty(shape, np.float32)
    _C.call_kernel("ember_fused::safe_softmax.out", [x, dim, out])
    check(out, want)
    if special:
        # The all -inf slice is zeros (softmax gives NaN there), the NaN one NaN.
        moved = np.moveaxis(out, dim, -1).reshape(-1, shape[dim])
        assert (moved[1] == 0).all() and np.isnan(moved[2]).all()


@pytest.mark.parametrize("dim", [1, 3])
def test_safe_softmax_channels_last_and_a_masked_plane(dim):
    x = (rand((2, 3, 4, 5), np.float32) * 10).astype(np.float32)
    x[1, :, 2, :] = -np.inf  # all -inf slices along dim 1 and along dim 3
    want = aten._safe_softmax.default(t(x), dim)
    out = channels_last(np.empty((2, 3, 4, 5), np.float32))
    _C.call_kernel("ember_fused::safe_softmax.out", [channels_last(x), dim, out])
    check(out, want)


def test_safe_softmax_refuses_other_dtypes_and_layouts():
    x = rand((2, 3), np.float64)
    with pytest.raises(RuntimeError, match="float32"):
        _C.call_kernel("ember_fused::safe_softmax.out", [x, 1, np.empty((2, 3), np.float64)])
    y = (rand((2, 3, 4, 5), np.float32)).astype(np.float32)
    with pytest.raises(RuntimeError, match="same dim order"):
        _C.call_kernel("ember_fused::safe_softmax.out",
                       [y, 1, channels_last(np.empty((2, 3, 4, 5), np.float32))])


# --- norms ---------------------------------------------------------------------


@pytest.mark.parametrize("shape,normalized", [((2, 3, 8), [8]), ((4, 3, 5), [3, 5]), ((6,), [6]),
                                              ((0, 4), [4])])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_native_layer_norm(shape, normalized, affine, dtype):
    x = rand(shape, dtype)
    w = rand(normalized, dtype) if affine else None
    b = rand(normalized, dtype) if affine else None
    want = aten.native_layer_norm.default(t(x), normalized, None if w is None else t(w),
                                          None if b is None else t(b), 1e-5)
    outs = [empty_for(r) for r in want]
    _C.call_kernel("aten::native_layer_norm.out", [x, normalized, w, b, 1e-5, *outs],
                   returns=[5, 6, 7])
    for got, r in zip(outs, want, strict=True):
        check(got, r)


@pytest.mark.parametrize("rows,hidden", [(197, 768), (3, 1000), (5, 17), (2, 1)])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_native_layer_norm_float32_rows(rows, hidden, affine):
    """The vectorised float32 path (unit-stride rows), including rows whose
    mean is far larger than their spread (a one-pass sum of squares would
    cancel there) and 1-element rows (variance 0, rstd = 1/sqrt(eps))."""
    # Its own generator: the inputs do not depend on which tests ran before
    # (pytest-xdist spreads them over workers).
    rng = np.random.default_rng(rows * 1009 + hidden)
    x = rng.standard_normal((rows, hidden)).astype(np.float32)
    x[0] += 1000.0
    w = rng.standard_normal(hidden).astype(np.float32) if affine in ("both", "weight") else None
    b = rng.standard_normal(hidden).astype(np.float32) if affine in ("both", "bias") else None
    want = aten.native_layer_norm.default(t(x), [hidden], None if w is None else t(w),
                                          None if b is None else t(b), 1e-5)
    outs = [empty_for(r) for r in want]
    _C.call_kernel("aten::native_layer_norm.out", [x, [hidden], w, b, 1e-5, *outs],
                   returns=[5, 6, 7])
    y, mean, rstd = outs
    # The input's own resolution bounds the result: a row near 1000 carries
    # its ulp (6e-5) into x - mean, scaled by rstd and the weight. 4 ulp of
    # the row's largest |x| (measured worst over 300 seeds: 0.38 of this bound).
    scale = np.abs(x).max(axis=1, keepdims=True) * want[2].numpy().reshape(rows, 1)
    scale = scale * (np.abs(w).max() if w is not None else 1.0)
    bound = 4 * np.finfo(np.float32).eps * scale + 1e-5
    assert np.all(np.abs(y - want[0].numpy()) <= bound), (np.abs(y - want[0].numpy()) / bound).max()
    np.testing.assert_allclose(mean, want[1].numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rstd, want[2].numpy(), rtol=1e-4)


def test_native_layer_norm_channels_last_input():
    x = rand((2, 3, 4, 5), np.float32)
    want = aten.native_layer_norm.default(t(x), [4, 5], None, None, 1e-5)
    outs = [empty_for(r) for r in want]
    _C.call_kernel("aten::native_layer_norm.out", [channels_last(x), [4, 5], None, None, 1e-5,
                                                   *outs], returns=[5, 6, 7])
    for got, r in zip(outs, want, strict=True):
        check(got, r)


# Groups of one element are left out: eager float32 statistics there are off by ~3e-5.
@pytest.mark.parametrize("shape,group", [((2, 6, 4, 3), 3), ((3, 4, 5), 2), ((2, 4), 2)])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("cl", [False, True])
def test_native_group_norm(shape, group, affine, dtype, cl):
    if cl and len(shape) != 4:
        pytest.skip("channels-last is 4-D")
    x = rand(shape, dtype)
    c = shape[1]
    hxw = int(np.prod(shape[2:]))
    w = rand((c,), dtype) if affine else None
    b = rand((c,), dtype) if affine else None
    want = aten.native_group_norm.default(t(x), None if w is None else t(w),
                                          None if b is None else t(b), shape[0], c, hxw, group,
                                          1e-5)
    outs = [empty_for(r) for r in want]
    if cl:
        outs[0] = channels_last(outs[0])
        x = channels_last(x)
    _C.call_kernel("aten::native_group_norm.out",
                   [x, w, b, shape[0], c, hxw, group, 1e-5, *outs], returns=[8, 9, 10])
    for got, r in zip(outs, want, strict=True):
        check(got, r)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (2, 3, 6)])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_batch_norm_no_training(shape, affine, dtype):
    x = rand(shape, dtype)
    c = shape[1]
    w = rand((c,), dtype) if affine else None
    b = rand((c,), dtype) if affine else None
    rm = rand((c,), dtype)
    rv = (np.abs(rand((c,), np.float64)) + 0.5).astype(dtype)
    want = aten._native_batch_norm_legit_no_training.default(
        t(x), None if w is None else t(w), None if b is None else t(b), t(rm), t(rv), 0.1, 1e-5)
    outs = [empty_for(r) for r in want]
    xin = channels_last(x) if len(shape) == 4 else x
    _C.call_kernel("aten::_native_batch_norm_legit_no_training.out",
                   [xin, w, b, rm, rv, 0.1, 1e-5, *outs], returns=[7, 8, 9])
    for got, r in zip(outs, want, strict=True):
        check(got, r)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_no_stats(dtype):
    x = rand((3, 4, 5), dtype)
    w = rand((4,), dtype)
    want = aten._native_batch_norm_legit.no_stats(t(x), t(w), None, True, 0.1, 1e-5)
    outs = [empty_for(r) for r in want]
    _C.call_kernel("aten::_native_batch_norm_legit.no_stats_out",
                   [x, w, None, True, 0.1, 1e-5, *outs], returns=[6, 7, 8])
    for got, r in zip(outs, want, strict=True):
        check(got, r)


# --- pooling -------------------------------------------------------------------

AVG2D_CASES = [
    # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ([2, 2], [], [0, 0], False, True, None),
    ([3, 3], [2, 2], [1, 1], False, True, None),
    ([3, 3], [2, 2], [1, 1], False, False, None),
    ([3, 2], [2, 1], [1, 0], True, True, None),
    ([3, 3], [2, 2], [1, 1], True, False, None),
    ([2, 2], [2, 2], [1, 1], False, True, 3),
]


@pytest.mark.parametrize("args", AVG2D_CASES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int64])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 5)])
def test_avg_pool2d(args, dtype, shape):
    x = rand(shape, dtype)
    want = aten.avg_pool2d.default(t(x), *args)
    out = empty_for(want)
    xin = channels_last(x) if len(shape) == 4 else x
    _C.call_kernel("aten::avg_pool2d.out", [xin, *args, out])
    check(out, want)


@pytest.mark.parametrize("args", [([2, 2, 2], [], [0, 0, 0], False, True, None),
                                  ([3, 3, 3], [2, 2, 2], [1, 1, 1], True, False, None)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool3d(args, dtype):
    x = rand((2, 2, 5, 6, 5), dtype)
    want = aten.avg_pool3d.default(t(x), *args)
    out = empty_for(want)
    _C.call_kernel("aten::avg_pool3d.out", [x, *args, out])
    check(out, want)


MAXPOOL2D_CASES = [
    # kernel, stride, padding, dilation, ceil_mode
    ([2, 2], [], [0, 0], [1, 1], False),
    ([3, 3], [2, 2], [1, 1], [1, 1], False),
    ([3, 3], [2, 2], [1, 1], [1, 1], True),
    ([2, 3], [1, 2], [1, 1], [2, 1], False),
]


@pytest.mark.parametrize("args", MAXPOOL2D_CASES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int32, np.int64])
@pytest.mark.parametrize("cl", [False, True])
def test_max_pool2d_with_indices(args, dtype, cl):
    x = distinct((2, 3, 7, 6), dtype)
    values, indices = aten.max_pool2d_with_indices.default(t(x), *args)
    out_v, out_i = empty_for(values), empty_for(indices)
    xin = channels_last(x) if cl else x
    _C.call_kernel("aten::max_pool2d_with_indices.out", [xin, *args, out_v, out_i],
                   returns=[6, 7])
    check(out_v, values)
    check(out_i, indices)


def test_max_pool2d_nan():
    x = rand((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 1] = np.nan
    values, indices = aten.max_pool2d_with_indices.default(t(x), [2, 2], [2, 2])
    out_v, out_i = empty_for(values), empty_for(indices)
    _C.call_kernel("aten::max_pool2d_with_indices.out",
                   [x, [2, 2], [2, 2], [0, 0], [1, 1], False, out_v, out_i], returns=[6, 7])
    check(out_v, values)
    check(out_i, indices)


# float32 NCHW pools take the row path (interior columns a block of outputs
# at a time, vectorised; planes over the thread pool); channels-last and
# dilated ones the element loop. Both must match eager, values and indices
# exactly, on widths past the 64-output block, ties, NaN and inf.
MAXPOOL2D_ROW_CASES = [
    ((1, 4, 112, 112), ([3, 3], [2, 2], [1, 1], [1, 1], False)),  # ResNet's stem pool
    ((2, 3, 9, 150), ([3, 3], [1, 1], [1, 1], [1, 1], False)),
    ((1, 2, 8, 131), ([2, 5], [2, 2], [1, 2], [1, 1], True)),
    ((2, 3, 7, 66), ([1, 4], [1, 2], [0, 0], [1, 1], False)),
    ((3, 10, 70), ([3, 3], [2, 1], [1, 0], [1, 1], True)),  # no batch dim
    ((1, 1, 5, 3), ([3, 3], [1, 1], [1, 1], [1, 1], False)),  # no interior column
]


@pytest.mark.parametrize("shape,args", MAXPOOL2D_ROW_CASES)
@pytest.mark.parametrize("values", ["distinct", "ties", "nan_inf"])
def test_max_pool2d_row_path_matches_eager_and_the_element_loop(shape, args, values):
    rng = np.random.default_rng(7)
    if values == "ties":
        x = rng.integers(-2, 3, size=shape).astype(np.float32)  # many equal maxima: first wins
    else:
        x = rng.standard_normal(shape).astype(np.float32)
    if values == "nan_inf":
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = np.nan
        flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = np.inf
        flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = -np.inf
    want_v, want_i = aten.max_pool2d_with_indices.default(t(x), *args)
    got = []
    for layout in ("rows", "elements"):
        xin = x if layout == "rows" or x.ndim != 4 else channels_last(x)
        out_v, out_i = empty_for(want_v), empty_for(want_i)
        _C.call_kernel("aten::max_pool2d_with_indices.out", [xin, *args, out_v, out_i],
                       returns=[6, 7])
        np.testing.assert_array_equal(out_v, want_v.numpy(), err_msg=layout)
        np.testing.assert_array_equal(out_i, want_i.numpy(), err_msg=layout)
        got.append((out_v, out_i))
    np.testing.assert_array_equal(got[0][1], got[1][1])


# ember_fused::max_pool2d: the values of max_pool2d_with_indices without the
# indices, on the row path (NCHW, float32 and int8), the element loop
# (channels-last, dilation, other dtypes), ties, NaN and inf.
@pytest.mark.parametrize("shape,args", MAXPOOL2D_ROW_CASES + [
    ((2, 3, 7, 6), case) for case in MAXPOOL2D_CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.float64, np.int32])
def test_max_pool2d_without_indices_matches_eager(shape, args, dtype):
    rng = np.random.default_rng(11)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(dtype)
    else:
        x = rng.standard_normal(shape).astype(dtype)
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = np.nan
        flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = -np.inf
    want = aten.max_pool2d_with_indices.default(t(x.astype(np.float64)), *args)[0]
    want = want.numpy().astype(dtype)
    for layout in ("rows", "elements"):
        xin = x if layout == "rows" or x.ndim != 4 else channels_last(x)
        out = np.empty(want.shape, dtype)
        _C.call_kernel("ember_fused::max_pool2d.out", [xin, *args, out])
        np.testing.assert_array_equal(out, want, err_msg=layout)


# Values of a 3-wide, stride-2 pool (ResNet's stem pool) on the row path
# (max_pool_row_s2.h's vector rows on AVX2 and AVX-512 hosts): widths that
# leave every count of outputs past the vector blocks (8 and 16 float32
# lanes, 16 and 32 int8 lanes, the AVX2 forms' last block moved back), one to
# three window rows (padding and ceil mode), NaN, and signed zeros, where the
# first maximum in eager's window order decides the sign: compared bit for bit.
@pytest.mark.parametrize("width", [3, 5, 17, 20, 33, 34, 35, 36, 37, 38, 64, 65, 66, 67, 68,
                                   69, 70, 71, 112, 113])
@pytest.mark.parametrize("values", ["normal", "nan", "zeros", "int8"])
def test_max_pool2d_values_3_wide_stride_2(width, values):
    rng = np.random.default_rng(width)
    if values == "int8":
        x = rng.integers(-128, 128, size=(2, 3, 6, width)).astype(np.int8)
    elif values == "zeros":
        x = rng.choice(np.array([-0.0, 0.0, -1.0], np.float32), size=(2, 3, 6, width))
    else:
        x = rng.standard_normal((2, 3, 6, width)).astype(np.float32)
    if values == "nan":
        x[0, 1, 2, width // 2] = np.nan
        x[1, 2, 5, width - 1] = np.nan
        x[1, 0, rng.integers(0, 6, 8), rng.integers(0, width, 8)] = np.nan
    for args in (([3, 3], [2, 2], [1, 1], [1, 1], False), ([3, 3], [2, 2], [0, 0], [1, 1], True),
                 ([2, 3], [2, 2], [1, 1], [1, 1], False), ([3, 2], [2, 2], [1, 0], [1, 1], False),
                 ([1, 5], [1, 2], [0, 2], [1, 1], False)):
        want = aten.max_pool2d_with_indices.default(t(x), *args)[0].numpy()
        out = np.empty(want.shape, x.dtype)
        _C.call_kernel("ember_fused::max_pool2d.out", [x, *args, out])
        np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8), err_msg=str(args))


@pytest.mark.parametrize("args", [([2, 2, 2], [], [0, 0, 0], [1, 1, 1], False),
                                  ([3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool3d_with_indices(args, dtype):
    x = distinct((2, 2, 5, 6, 5), dtype)
    values, indices = aten.max_pool3d_with_indices.default(t(x), *args)
    out_v, out_i = empty_for(values), empty_for(indices)
    _C.call_kernel("aten::max_pool3d_with_indices.out", [x, *args, out_v, out_i],
                   returns=[6, 7])
    check(out_v, values)
    check(out_i, indices)


@pytest.mark.parametrize("shape,size", [((2, 3, 7, 6), [3, 4]), ((2, 3, 7, 6), [1, 1]),
                                        ((3, 5, 9), [4, 9]), ((2, 3, 4, 4), [8, 8])])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_adaptive_avg_pool2d(shape, size, dtype):
    x = rand(shape, dtype)
    want = aten._adaptive_avg_pool2d.default(t(x), size)
    out = empty_for(want)
    xin = channels_last(x) if len(shape) == 4 else x
    _C.call_kernel("aten::_adaptive_avg_pool2d.out", [xin, size, out])
    check(out, want)


@pytest.mark.parametrize("size", [[2, 3, 2], [1, 1, 1]])
def test_adaptive_avg_pool3d(size):
    x = rand((2, 3, 5, 7, 4), np.float32)
    want = aten._adaptive_avg_pool3d.default(t(x), size)
    out = empty_for(want)
    _C.call_kernel("aten::_adaptive_avg_pool3d.out", [x, size, out])
    check(out, want)


# --- upsampling ----------------------------------------------------------------

RESIZES = [([8, 6], None), ([5, 7], None), ([3, 2], None), (None, [2.0, 2.0]),
           (None, [1.5, 2.5]), (None, [0.5, 0.7])]


@pytest.mark.parametrize("size,scales", RESIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.uint8])
def test_upsample_nearest2d(size, scales, dtype):
    x = rand((2, 3, 4, 3), dtype)
    want = aten.upsample_nearest2d.vec(t(x), size, scales)
    out = empty_for(want)
    _C.call_kernel("aten::upsample_nearest2d.vec_out", [channels_last(x), size, scales, out])
    check(out, want)


@pytest.mark.parametrize("size,scales", RESIZES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_upsample_bilinear2d(size, scales, align_corners, dtype):
    x = rand((2, 3, 4, 3), dtype)
    want = aten.upsample_bilinear2d.vec(t(x), size, align_corners, scales)
    out = empty_for(want)
    _C.call_kernel("aten::upsample_bilinear2d.vec_out", [x, size, align_corners, scales, out])
    check(out, want)


def _bilinear_u8_pass(x: np.ndarray, axis: int, out_size: int, align_corners: bool,
                      scale: float | None) -> np.ndarray:
    """One pass of Ember's documented uint8 bilinear (op_upsample.cpp), in
    Python integers and doubles: an independent model of the algorithm."""
    n = x.shape[axis]
    if n == out_size:
        return x.astype(np.int64)
    if align_corners:
        s = (n - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        s = 1.0 / scale if scale else n / out_size
    taps = []
    for o in range(out_size):
        src = s * o if align_corners else max(s * (o + 0.5) - 0.5, 0.0)
        i0 = min(int(src), n - 1)
        if i0 < n - 1:
            lam = min(max(src - i0, 0.0), 1.0)
            taps.append((i0, i0 + 1, 1 - lam, lam))
        else:
            taps.append((i0, i0, 1.0, 0.0))
    biggest = max(max(w0, w1) for _, _, w0, w1 in taps)
    precision = 0
    while biggest * (1 << (precision + 1)) < 32768:
        precision += 1
    a = np.moveaxis(x, axis, -1).astype(np.int64)
    out = np.zeros(a.shape[:-1] + (out_size,), np.int64)
    for o, (i0, i1, w0, w1) in enumerate(taps):
        q0, q1 = int(np.round(w0 * (1 << precision))), int(np.round(w1 * (1 << precision)))
        acc = (1 << (precision - 1)) + q0 * a[..., i0] + q1 * a[..., i1]
        out[..., o] = np.clip(acc >> precision, 0, 255)
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("align_corners", [False, True])
def test_upsample_bilinear2d_uint8(align_corners):
    # uint8 is computed in fixed point (W pass, then H pass), the algorithm
    # eager's AVX2 kernels use: Ember equals the model above bit for bit on
    # every host, and eager too where torch runs its AVX2 kernels (its other
    # CPU paths compute uint8 otherwise, e.g. ATEN_CPU_CAPABILITY=default).
    rng = np.random.default_rng(5)
    for i in range(120):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        if i % 3 == 2:
            size, scales = None, [float(v) for v in rng.uniform(0.3, 3.5, 2)]
            if min(int(h * scales[0]), int(w * scales[1])) < 1:
                continue
            out_hw = (int(np.floor(h * scales[0])), int(np.floor(w * scales[1])))
        else:
            size, scales = [int(v) for v in rng.integers(1, 50, 2)], None
            out_hw = tuple(size)
        x = rng.integers(0, 256, (2, 3, h, w)).astype(np.uint8)
        if i % 2:
            x = channels_last(x)
        out = np.empty((2, 3) + out_hw, np.uint8)
        _C.call_kernel("aten::upsample_bilinear2d.vec_out", [x, size, align_corners, scales, out])
        model = _bilinear_u8_pass(x, 3, out_hw[1], align_corners, scales[1] if scales else None)
        model = _bilinear_u8_pass(model, 2, out_hw[0], align_corners,
                                  scales[0] if scales else None)
        np.testing.assert_array_equal(out, model, err_msg=f"{x.shape} {size} {scales}")
        # Within about 1 of the exact result: half a step from rounding the W
        # pass, half from the final rounding, plus the weights' fixed point.
        exact = aten.upsample_bilinear2d.vec(t(x).double(), size, align_corners, scales)
        assert np.abs(out.astype(np.float64) - exact.numpy()).max() <= 1.01
        if torch.backends.cpu.get_cpu_capability() == "AVX2":
            want = aten.upsample_bilinear2d.vec(t(x), size, align_corners, scales)
            np.testing.assert_array_equal(out, want.numpy(), err_msg=f"{x.shape} {size} {scales}")


# --- sort / topk -----------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sort_stable(dim, descending, dtype, layout):
    x = rand((5, 7), dtype)  # Ties included: the stable order is unique.
    values, indices = aten.sort.stable(t(x), stable=True, dim=dim, descending=descending)
    out_v, out_i = empty_for(values), empty_for(indices)
    _C.call_kernel("aten::sort.values_stable",
                   [LAYOUTS[layout](x), True, dim, descending, out_v, out_i], returns=[4, 5])
    check(out_v, values)
    check(out_i, indices)


def test_sort_nan():
    x = np.array([2.0, np.nan, -1.0, np.nan, 0.5], dtype=np.float32)
    for descending in (False, True):
        values, indices = aten.sort.stable(t(x), stable=True, dim=0, descending=descending)
        out_v, out_i = empty_for(values), empty_for(indices)
        _C.call_kernel("aten::sort.values", [x, 0, descending, out_v, out_i], returns=[3, 4])
        check(out_v, values)
        check(out_i, indices)


@pytest.mark.parametrize("k,dim", [(3, -1), (1, 0), (0, 1), (7, 1), (4, 0)])
@pytest.mark.parametrize("largest", [False, True])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_topk(k, dim, largest, dtype):
    x = distinct((4, 7), dtype) if np.dtype(dtype).itemsize > 1 else rand((4, 7), dtype)
    values, indices = aten.topk.default(t(x), k, dim, largest, True)
    out_v, out_i = empty_for(values), empty_for(indices)
    _C.call_kernel("aten::topk.values", [x, k, dim, largest, True, out_v, out_i],
                   returns=[5, 6])
    check(out_v, values)
    if np.dtype(dtype).itemsize > 1:
        check(out_i, indices)
    else:  # Ties: any index holding the value is right.
        taken = np.take_along_axis(x, out_i, axis=dim)
        np.testing.assert_array_equal(taken, out_v)


# --- distances -----------------------------------------------------------------


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("shapes", [((5, 3), (4, 3)), ((2, 5, 3), (2, 4, 3)),
                                    ((2, 1, 5, 3), (3, 4, 3))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cdist(p, shapes, dtype):
    a, b = rand(shapes[0], dtype), rand(shapes[1], dtype)
    if p == 0.0:
        a, b = np.round(a), np.round(b)
    want = aten._cdist_forward.default(t(a), t(b), p, None)
    out = empty_for(want)
    _C.call_kernel("aten::_cdist_forward.out", [a, b, p, None, out])
    check(out, want)


@pytest.mark.parametrize("p", [1.0, 2.0, 0.5, float("inf")])
@pytest.mark.parametrize("n", [1, 2, 6])
def test_pdist(p, n):
    x = rand((n, 4), np.float64)
    want = aten._pdist_forward.default(t(x), p)
    out = empty_for(want)
    _C.call_kernel("aten::_pdist_forward.out", [x, p, out])
    check(out, want)


# --- grid sampling / col2im ------------------------------------------------------


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grid_sampler_2d(mode, padding, align_corners, dtype):
    x = rand((2, 3, 5, 4), dtype)
    grid = (RNG.uniform(-1.3, 1.3, size=(2, 6, 7, 2))).astype(dtype)
    want = aten.grid_sampler_2d.default(t(x), t(grid), mode, padding, align_corners)
    out = empty_for(want)
    _C.call_kernel("aten::grid_sampler_2d.out",
                   [channels_last(x), grid, mode, padding, align_corners, out])
    check(out, want)


@pytest.mark.parametrize("args", [
    # output_size, kernel, dilation, padding, stride
    ([4, 5], [2, 2], [1, 1], [0, 0], [1, 1]),
    ([6, 6], [3, 3], [1, 1], [1, 1], [2, 2]),
    ([7, 5], [2, 3], [2, 1], [1, 0], [1, 2]),
])
@pytest.mark.parametrize("batched", [False, True])
def test_col2im(args, batched):
    size, k, d, p, s = args
    blocks = [(size[i] + 2 * p[i] - (d[i] * (k[i] - 1) + 1)) // s[i] + 1 for i in range(2)]
    shape = (3 * k[0] * k[1], blocks[0] * blocks[1])
    x = rand(((2,) + shape) if batched else shape, np.float32)
    want = aten.col2im.default(t(x), size, k, d, p, s)
    out = empty_for(want)
    _C.call_kernel("aten::col2im.out", [x, size, k, d, p, s, out])
    check(out, want)


# --- errors through the binding --------------------------------------------------


def test_errors_name_the_op_and_argument():
    x = rand((2, 3), np.float32)
    with pytest.raises(Exception, match="dim"):
        _C.call_kernel("aten::sum.IntList_out", [x, [5], False, None, np.empty(2, np.float32)])
    with pytest.raises(Exception, match="int64"):
        _C.call_kernel("aten::argmax.out", [x, 1, False, np.empty(2, np.float32)])
    with pytest.raises(Exception, match="returns"):
        _C.call_kernel("aten::max.dim_max", [x, 1, False, np.empty(2, np.float32),
                                             np.empty(2, np.int64)], returns=[9])
