"""Portable kernels against PyTorch eager, one kernel call at a time.

Each test builds inputs with NumPy, runs the kernel through
``ember._C.call_kernel`` (out arrays are written in place) and compares with
the same op in eager PyTorch. Covers dtypes, broadcasting, empty tensors and
non-contiguous (channels-last / transposed) layouts. bfloat16 is covered by
the C++ tests only (NumPy has no bfloat16).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

# Absolute and relative tolerance per dtype (results may differ from eager by
# summation order and by computing 16-bit floats in float32).
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-5, 1e-5),
    np.dtype(np.float64): (1e-10, 1e-10),
}
GEMM_TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (5e-2, 2e-2),
    np.dtype(np.float32): (1e-4, 1e-4),
    np.dtype(np.float64): (1e-10, 1e-10),
}

FLOAT_DTYPES = [np.float16, np.float32, np.float64]
INT_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [np.bool_]

RNG = np.random.default_rng(0)


def rand(shape, dtype) -> np.ndarray:
    """Random values; always an ndarray (a 0-d shape gives a 0-d array, not a scalar)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = RNG.integers(0, 2, size=shape)
    elif dtype.kind in "iu":
        values = RNG.integers(0 if dtype.kind == "u" else -20, 20, size=shape)
    else:
        values = RNG.standard_normal(shape)
    return np.asarray(values).astype(dtype)


def channels_last(x: np.ndarray) -> np.ndarray:
    """Same logical values, channels-last memory (4-D)."""
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def check(got: np.ndarray, want: torch.Tensor, tolerances=TOLERANCES) -> None:
    want_np = want.numpy()
    assert got.shape == want_np.shape
    assert got.dtype == want_np.dtype, (got.dtype, want_np.dtype)
    if got.dtype in tolerances:
        atol, rtol = tolerances[got.dtype]
        np.testing.assert_allclose(got.astype(np.float64), want_np.astype(np.float64),
                                   atol=atol, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want_np)


def t(x: np.ndarray) -> torch.Tensor:
    # np.ascontiguousarray would turn a 0-d array into 1-d.
    return torch.from_numpy(np.array(x, order="C"))


def empty_like_torch(want: torch.Tensor) -> np.ndarray:
    return np.empty(tuple(want.shape), dtype=want.numpy().dtype)


# --- elementwise binary ------------------------------------------------------

BINARY_SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 1, 4), (3, 1)),
    ((4,), ()),
    ((), ()),
    ((0, 3), (3,)),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shapes", BINARY_SHAPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary(op, shapes, dtype):
    if op == "sub" and dtype == np.bool_:
        pytest.skip("torch rejects bool subtraction (tested as an error in C++)")
    a, b = rand(shapes[0], dtype), rand(shapes[1], dtype)
    if op == "div":
        b = np.where(b == 0, np.ones_like(b), b)
    ta, tb = t(a), t(b)
    if op in ("add", "sub"):
        alpha = 2 if dtype != np.bool_ else True
        want = getattr(torch, op)(ta, tb, alpha=alpha)
        out = empty_like_torch(want)
        _C.call_kernel(f"aten::{op}.out", [a, b, alpha, out])
    else:
        want = getattr(torch, op)(ta, tb)
        out = empty_like_torch(want)
        _C.call_kernel(f"aten::{op}.out", [a, b, out])
    check(out, want)


@pytest.mark.parametrize("dtypes", [(np.int32, np.float32), (np.uint8, np.int8),
                                    (np.float16, np.float64), (np.bool_, np.int64)])
def test_add_promotes(dtypes):
    a, b = rand((3, 4), dtypes[0]), rand((4,), dtypes[1])
    want = torch.add(t(a), t(b))
    out = empty_like_torch(want)
    _C.call_kernel("aten::add.out", [a, b, 1, out])
    check(out, want)


def test_add_channels_last():
    a = channels_last(rand((2, 3, 4, 5), np.float32))
    b = rand((1, 3, 1, 1), np.float32)
    want = torch.add(t(a), t(b), alpha=0.5)
    out = channels_last(np.empty((2, 3, 4, 5), np.float32))
    _C.call_kernel("aten::add.out", [a, b, 0.5, out])
    check(out, want)


# --- elementwise unary ---------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int32])
@pytest.mark.parametrize("shape", [(3, 4), (), (0,), (2, 3, 4, 5)])
@pytest.mark.parametrize("op", ["relu", "sigmoid", "sin", "tanh"])
def test_unary(op, shape, dtype):
    x = rand(shape, dtype)
    if len(shape) == 4:
        x = channels_last(x)
    want = getattr(torch, op)(t(x))
    out = empty_like_torch(want)
    _C.call_kernel(f"aten::{op}.out", [x, out])
    check(out, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int64])
@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (None, 0), (1, None), (2, -2)])
def test_clamp(bounds, dtype):
    lo, hi = bounds
    x = rand((4, 5), dtype)
    want = torch.clamp(t(x), lo, hi)
    out = empty_like_torch(want)
    _C.call_kernel("aten::clamp.out", [x, lo, hi, out])
    check(out, want)


# --- matrix products -----------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int32, np.int64])
@pytest.mark.parametrize("mkn", [(1, 1, 1), (5, 7, 3), (77, 150, 101), (0, 4, 3), (3, 0, 2)])
@pytest.mark.parametrize("transposed", [False, True])
def test_mm(mkn, dtype, transposed):
    m, k, n = mkn
    a = rand((m, k), dtype)
    b = rand((n, k), dtype).T if transposed else rand((k, n), dtype)
    want = torch.mm(t(a), t(b))
    out = empty_like_torch(want)
    _C.call_kernel("aten::mm.out", [a, b, out])
    check(out, want, GEMM_TOLERANCES)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("bias_shape", [(6,), (4, 6), (1, 1)])
@pytest.mark.parametrize("beta_alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_addmm(bias_shape, beta_alpha, dtype):
    beta, alpha = beta_alpha
    bias, a, b = rand(bias_shape, dtype), rand((4, 9), dtype), rand((9, 6), dtype)
    want = torch.addmm(t(bias), t(a), t(b), beta=beta, alpha=alpha)
    out = empty_like_torch(want)
    _C.call_kernel("aten::addmm.out", [bias, a, b, beta, alpha, out])
    check(out, want, GEMM_TOLERANCES)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int32])
@pytest.mark.parametrize("bmkn", [(3, 4, 5, 6), (0, 2, 2, 2), (2, 33, 17, 40)])
def test_bmm(bmkn, dtype):
    bs, m, k, n = bmkn
    a, b = rand((bs, m, k), dtype), rand((bs, k, n), dtype)
    want = torch.bmm(t(a), t(b))
    out = empty_like_torch(want)
    _C.call_kernel("aten::bmm.out", [a, b, out])
    check(out, want, GEMM_TOLERANCES)


# --- convolution ------------------------------------------------------------------

CONV2D_CASES = [
    # (N, C, H, W, OC, KH, KW, stride, padding, dilation, groups, bias)
    (1, 3, 8, 8, 4, 3, 3, [1, 1], [1, 1], [1, 1], 1, True),
    (2, 4, 7, 9, 6, 3, 2, [2, 1], [0, 1], [1, 2], 2, False),
    (1, 6, 5, 5, 6, 3, 3, [1, 1], [1, 1], [1, 1], 6, True),
    (2, 16, 4, 4, 24, 1, 1, [1, 1], [0, 0], [1, 1], 1, True),
    (1, 32, 14, 14, 64, 3, 3, [2, 2], [1, 1], [1, 1], 1, True),
    (0, 3, 5, 5, 2, 3, 3, [1, 1], [0, 0], [1, 1], 1, False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV2D_CASES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv2d(case, dtype, layout):
    n, c, h, w, oc, kh, kw, stride, padding, dilation, groups, has_bias = case
    x, weight = rand((n, c, h, w), dtype), rand((oc, c // groups, kh, kw), dtype)
    bias = rand((oc,), dtype) if has_bias else None
    want = torch.nn.functional.conv2d(t(x), t(weight), None if bias is None else t(bias),
                                      stride, padding, dilation, groups)
    out = empty_like_torch(want)
    if layout == "channels_last":
        x, weight, out = channels_last(x), channels_last(weight), channels_last(out)
    _C.call_kernel("aten::convolution.out",
                   [x, weight, bias, stride, padding, dilation, False, [0, 0], groups, out])
    check(out, want, GEMM_TOLERANCES)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv1d(dtype):
    x, weight, bias = rand((2, 4, 20), dtype), rand((6, 2, 3), dtype), rand((6,), dtype)
    want = torch.nn.functional.conv1d(t(x), t(weight), t(bias), 2, 1, 2, 2)
    out = empty_like_torch(want)
    _C.call_kernel("aten::convolution.out", [x, weight, bias, [2], [1], [2], False, [0], 2, out])
    check(out, want, GEMM_TOLERANCES)


def test_conv_transposed_wrong_out_shape_is_named():
    # Transposed convolution runs (test_kernels_conv_vs_eager.py covers it);
    # an out of the non-transposed shape is refused with both shapes named.
    x, weight = rand((1, 2, 4, 4), np.float32), rand((2, 2, 3, 3), np.float32)
    out = np.empty((1, 2, 5, 5), np.float32)
    with pytest.raises(RuntimeError, match="out"):
        _C.call_kernel("aten::convolution.out",
                       [x, weight, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1, out])
    want = torch.ops.aten.convolution.default(torch.from_numpy(x), torch.from_numpy(weight), None,
                                              [1, 1], [0, 0], [1, 1], True, [0, 0], 1)
    assert tuple(want.shape) == (1, 2, 6, 6)


# --- data movement ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_permute_view_clone(dtype, layout):
    x = rand((2, 3, 4, 5), dtype)
    if layout == "channels_last":
        x = channels_last(x)
    tx = t(x)
    want = tx.permute(0, 2, 3, 1)
    out = empty_like_torch(want)
    _C.call_kernel("aten::permute_copy.out", [x, [0, 2, 3, 1], out])
    check(out, want)
    want = tx.reshape(6, -1)
    out = empty_like_torch(want)
    _C.call_kernel("aten::view_copy.out", [x, [6, -1], out])
    check(out, want)
    out = channels_last(np.empty(x.shape, x.dtype))
    _C.call_kernel("aten::clone.out", [x, None, out])
    check(out, tx)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("case", [((3, 1), [2, 3, 4]), ((1,), [0]), ((2, 1), [-1, 5])])
def test_expand_copy(case, dtype):
    shape, size = case
    x = rand(shape, dtype)
    want = t(x).expand(*size)
    out = empty_like_torch(want)
    _C.call_kernel("aten::expand_copy.out", [x, size, False, out])
    check(out, want)


@pytest.mark.parametrize("src", ALL_DTYPES)
@pytest.mark.parametrize("dst", ALL_DTYPES)
def test_to_copy(src, dst):
    x = rand((3, 4), src) * (3 if np.dtype(src).kind == "f" else 1)
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iub":
        x = np.abs(x)  # Keep float → uint8 in range (out-of-range casts are undefined).
    want = t(x).to(torch.from_numpy(np.empty(0, dst)).dtype)
    out = np.empty(x.shape, dst)
    _C.call_kernel("aten::_to_copy.out", [x, False, None, out])
    check(out, want)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_full_and_zeros(dtype):
    value = True if dtype == np.bool_ else 3
    out = np.empty((2, 3), dtype)
    _C.call_kernel("aten::full.out", [[2, 3], value, out])
    check(out, torch.full((2, 3), value, dtype=t(out).dtype))
    _C.call_kernel("aten::zeros.out", [[2, 3], out])
    check(out, torch.zeros((2, 3), dtype=t(out).dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_randn_statistics(dtype):
    out = np.empty((200, 100), dtype)
    _C.call_kernel("aten::randn.out", [[200, 100], out])
    values = out.astype(np.float64)
    assert np.isfinite(values).all()
    assert abs(values.mean()) < 0.05
    assert abs(values.std() - 1) < 0.05


# --- errors ---------------------------------------------------------------------------

def test_errors_name_the_op():
    a = rand((2, 3), np.float32)
    with pytest.raises(RuntimeError, match=r"aten::add\.out.*out"):
        _C.call_kernel("aten::add.out", [a, a, 1, np.empty((3, 2), np.float32)])
    with pytest.raises(RuntimeError, match=r"aten::mm\.out"):
        _C.call_kernel("aten::mm.out", [a, a, np.empty((2, 3), np.float32)])
    with pytest.raises(RuntimeError, match=r"aten::div\.out.*int32"):
        _C.call_kernel("aten::div.out", [a, a, np.empty((2, 3), np.int32)])
