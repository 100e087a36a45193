"""Elementwise portable kernels against PyTorch eager, one kernel call at a time.

Contract as in test_kernels_vs_eager.py: inputs are NumPy arrays, the kernel
runs through ``ember._C.call_kernel(name, args)`` (the return slot is appended
automatically, out arrays are written in place) and is compared with the same
ATen overload in eager. When eager rejects an input (dtype not supported,
integer division by zero, ...) the kernel must fail too. Covers every dtype
NumPy has (bfloat16 is in the C++ tests), type promotion, broadcasting, 0-d,
empty and channels-last inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import special_values

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")
aten = torch.ops.aten

# (atol, rtol) per result dtype. 16-bit floats compute in float32 on both
# sides but may round the last bit differently; float32 transcendental
# functions differ from eager's vectorised versions by a few ulp.
TOLERANCES: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(np.float32): (1e-6, 2e-6),
    np.dtype(np.float64): (1e-12, 1e-12),
}

FLOAT_DTYPES = [np.float16, np.float32, np.float64]
INT_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [np.bool_]

RNG = np.random.default_rng(0)


def rand(shape, dtype, low: float = -3.0, high: float = 3.0) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = RNG.integers(0, 2, size=shape)
    elif dtype.kind in "iu":
        values = RNG.integers(0 if dtype.kind == "u" else -20, 20, size=shape)
    else:
        values = RNG.uniform(low, high, size=shape)
    return np.asarray(values).astype(dtype)


def channels_last(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def t(x):
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.array(x, order="C"))
    return x


def check(got: np.ndarray, want: torch.Tensor) -> None:
    want_np = want.numpy()
    assert got.shape == want_np.shape
    assert got.dtype == want_np.dtype, (got.dtype, want_np.dtype)
    if got.dtype in TOLERANCES:
        atol, rtol = TOLERANCES[got.dtype]
        np.testing.assert_allclose(got.astype(np.float64), want_np.astype(np.float64),
                                   atol=atol, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want_np)


def run(name: str, eager, args: list, kwargs: dict | None = None, layout_like=None) -> None:
    """Runs eager on `args` (arrays → tensors) and the kernel on args + out."""
    kwargs = kwargs or {}
    try:
        want = eager(*[t(a) for a in args], **kwargs)
    except (RuntimeError, ZeroDivisionError, ValueError):
        # An out of the right shape and the inputs' dtype, so the kernel fails
        # for the reason eager did, not for a bad out.
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        out = np.empty(shape, np.result_type(*arrays))
        with pytest.raises(RuntimeError):
            _C.call_kernel(name, [*args, *kwargs.values(), out])
        return
    out = np.empty(tuple(want.shape), dtype=want.numpy().dtype)
    if layout_like is not None and out.ndim == 4:
        out = channels_last(out)
    _C.call_kernel(name, [*args, *kwargs.values(), out])
    check(out, want)


SHAPES = [(2, 3), (), (0, 3)]

# --- unary -----------------------------------------------------------------------

UNARY_FLOAT = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "erf", "exp",
               "erfc", "exp2", "expm1", "lgamma", "log", "log10", "log1p", "log2", "reciprocal", "rsqrt", "sinh", "sqrt",
               "tan", "sigmoid", "tanh"]
UNARY_SAME = ["abs", "neg", "sign", "ceil", "floor", "round", "trunc"]
UNARY_PRED = ["isinf", "isnan", "signbit", "logical_not", "bitwise_not"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", UNARY_FLOAT + UNARY_SAME + UNARY_PRED)
def test_unary(op, shape, dtype):
    x = rand(shape, dtype)
    if op in ("acosh",):
        x = np.asarray(x + 3, dtype=dtype) if np.dtype(dtype).kind == "f" else x
    run(f"aten::{op}.out", getattr(aten, op).default, [x])


@pytest.mark.parametrize("op", ["exp", "sigmoid", "tanh", "expm1", "isnan", "isinf", "floor"])
def test_unary_finite_edge_values(op):
    # Overflow/underflow edges and tiny values, against eager. The non-finite
    # inputs and ±0 are checked against Ember's table (test_special_inputs).
    x = np.array([88.8, -88.8, 1e-8, -104.0, 20.0, 1.0, -1.0], np.float32)
    run(f"aten::{op}.out", getattr(aten, op).default, [x])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", sorted(special_values.TABLE))
def test_special_inputs(op, dtype):
    """NaN, ±inf and ±0 give the documented answers (docs/special-values.md),
    bit for bit with the sign of zero, in every dtype and on every host."""
    x, want = special_values.expected(op, dtype)
    # Three copies: more than one 8-lane vector, with a tail, so the vector
    # loops and their remainders both see every special value.
    x, want = np.tile(x, 3), np.tile(want, 3)
    out = np.empty_like(x)
    if op.startswith("gelu_"):
        _C.call_kernel("aten::gelu.out", [x, op.split("_")[1], out])
    else:
        _C.call_kernel(f"aten::{op}.out", [x, out])
    assert special_values.same_special(out, want), (x, out, want)


def test_signbit_of_zero_and_nan():
    x = np.array([-0.0, 0.0, np.nan, -np.nan, -np.inf, 1e-45, -1e-45], np.float32)
    out = np.empty(x.shape, np.bool_)
    _C.call_kernel("aten::signbit.out", [x, out])
    np.testing.assert_array_equal(out, [True, False, False, True, True, False, True])


@pytest.mark.parametrize("op", ["exp", "sigmoid", "tanh", "abs", "isnan", "logical_not"])
def test_unary_channels_last(op):
    x = channels_last(rand((2, 3, 4, 5), np.float32))
    run(f"aten::{op}.out", getattr(aten, op).default, [x], layout_like=x)


def test_fast_float32_wide_range():
    x = RNG.uniform(-100, 100, size=20000).astype(np.float32)
    for op in ["exp", "expm1", "sigmoid", "tanh", "erf"]:
        run(f"aten::{op}.out", getattr(aten, op).default, [x])


# Values where the float32 span loops (unary_f32) switch formulas, clamp,
# overflow or underflow, plus subnormals, ±0, ±inf and NaN.
SPECIAL_F32 = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e-45, 1.1754944e-38,
                        1e-8, -1e-8, 0.5, 0.99999994, 1.0, 1.0000001, -1.0, 1.4142135, -1.4142135,
                        2.5, 3.92, -3.92, 4.0, 4.0000005, 5.7, -5.7, 9.0, -9.0, 20.0, -20.0,
                        88.72283, 88.72284, 89.0, -87.3, -103.97, -104.0, -110.0, 1e30, -1e30,
                        3.4028235e38, -3.4028235e38], np.float32)


@pytest.mark.parametrize("op", sorted(special_values.ULP_BOUNDS))
def test_fast_float32_edge_values_within_ulps(op):
    # 37 values: more than one 8-lane vector, with a tail. Against a float64
    # reference with the bound fast_math.h states, not eager (whose answers
    # at these edges differ between its CPU paths).
    for x in (SPECIAL_F32[:37], SPECIAL_F32):
        out = np.empty_like(x)
        _C.call_kernel(f"aten::{op}.out", [x, out])
        err = special_values.ulp_error(out, special_values.reference_f64(op, x))
        assert err.max() <= special_values.ULP_BOUNDS[op], dict(zip(x.tolist(), err.tolist()))


def test_fast_float32_finite_values_match_eager():
    finite = SPECIAL_F32[np.isfinite(SPECIAL_F32)]
    for op in sorted(special_values.ULP_BOUNDS):
        run(f"aten::{op}.out", getattr(aten, op).default, [finite])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_float32_finite_range_matches_eager(approximate):
    # Non-finite inputs and ±0: test_special_inputs (eager's answer for
    # gelu(±inf) depends on its CPU path; Ember's is documented). Finite
    # inputs are compared with gelu computed in float64 and rounded once:
    # eager's float32 kernels overflow near FLT_MAX on some CPU paths
    # (gelu(3.4e38) is inf on its AVX-512 kernels, 3.4e38 on its AVX2 ones),
    # so eager's float32 answer there is a property of the host.
    finite = SPECIAL_F32[np.isfinite(SPECIAL_F32)]
    for x in (finite, RNG.uniform(-12, 12, size=5001).astype(np.float32)):
        want = aten.gelu.default(t(x.astype(np.float64)), approximate=approximate)
        want = want.to(torch.float32)
        assert bool(torch.isfinite(want).all()), "gelu of a finite float32 is finite"
        out = np.empty_like(x)
        _C.call_kernel("aten::gelu.out", [x, approximate, out])
        check(out, want)
    # Where eager's float32 path stays finite, Ember equals it within the
    # same bounds (the common case on every host).
    x = RNG.uniform(-12, 12, size=5001).astype(np.float32)
    out = np.empty_like(x)
    _C.call_kernel("aten::gelu.out", [x, approximate, out])
    check(out, aten.gelu.default(t(x), approximate=approximate))


@pytest.mark.parametrize("op", ["erf", "expm1"])
def test_fast_float32_channels_last_and_mixed_layout(op):
    x = channels_last(rand((2, 3, 4, 5), np.float32))
    run(f"aten::{op}.out", getattr(aten, op).default, [x], layout_like=x)
    # Contiguous self, channels-last out: the strided (non-span) loop.
    want = getattr(aten, op).default(t(x))
    out = channels_last(np.empty((2, 3, 4, 5), np.float32))
    _C.call_kernel(f"aten::{op}.out", [np.ascontiguousarray(x), out])
    check(out, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("decimals", [0, 2, -1])
def test_round_decimals(dtype, decimals):
    x = rand((3, 4), dtype, -500, 500)
    out_name = "aten::round.decimals_out"
    want = aten.round.decimals(t(x), decimals=decimals)
    out = np.empty(x.shape, x.dtype)
    _C.call_kernel(out_name, [x, decimals, out])
    check(out, want)


# --- activations -------------------------------------------------------------------

ACTIVATIONS = [
    ("aten::elu.out", lambda x: aten.elu.default(x, 1.5, 1.0, 2.0), [1.5, 1.0, 2.0]),
    ("aten::gelu.out", lambda x: aten.gelu.default(x, approximate="none"), ["none"]),
    ("aten::gelu.out", lambda x: aten.gelu.default(x, approximate="tanh"), ["tanh"]),
    ("aten::hardtanh.out", lambda x: aten.hardtanh.default(x, -1.0, 2.0), [-1.0, 2.0]),
    ("aten::hardtanh.out", lambda x: aten.hardtanh.default(x, 0, 5), [0, 5]),
    ("aten::leaky_relu.out", lambda x: aten.leaky_relu.default(x, 0.2), [0.2]),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES + [(2, 3, 4, 5)])
@pytest.mark.parametrize("case", range(len(ACTIVATIONS)))
def test_activation(case, shape, dtype):
    name, eager, extra = ACTIVATIONS[case]
    x = rand(shape, dtype)
    if len(shape) == 4:
        x = channels_last(x)
    try:
        want = eager(t(x))
    except RuntimeError:
        with pytest.raises(RuntimeError):
            _C.call_kernel(name, [x, *extra, np.empty(x.shape, x.dtype)])
        return
    out = np.empty(x.shape, want.numpy().dtype)
    if len(shape) == 4:
        out = channels_last(out)
    _C.call_kernel(name, [x, *extra, out])
    check(out, want)


# --- binary ------------------------------------------------------------------------

BINARY_SHAPES = [((2, 3), (2, 3)), ((2, 1, 4), (3, 1)), ((4,), ()), ((), ()), ((0, 3), (3,))]

TENSOR_OPS = {
    "aten::eq.Tensor_out": aten.eq.Tensor, "aten::ne.Tensor_out": aten.ne.Tensor,
    "aten::lt.Tensor_out": aten.lt.Tensor, "aten::le.Tensor_out": aten.le.Tensor,
    "aten::gt.Tensor_out": aten.gt.Tensor, "aten::ge.Tensor_out": aten.ge.Tensor,
    "aten::bitwise_and.Tensor_out": aten.bitwise_and.Tensor,
    "aten::bitwise_or.Tensor_out": aten.bitwise_or.Tensor,
    "aten::bitwise_xor.Tensor_out": aten.bitwise_xor.Tensor,
    "aten::logical_and.out": aten.logical_and.default,
    "aten::logical_or.out": aten.logical_or.default,
    "aten::logical_xor.out": aten.logical_xor.default,
    "aten::maximum.out": aten.maximum.default, "aten::minimum.out": aten.minimum.default,
    "aten::atan2.out": aten.atan2.default,
    "aten::fmax.out": aten.fmax.default, "aten::fmin.out": aten.fmin.default,
    "aten::hypot.out": aten.hypot.default, "aten::nextafter.out": aten.nextafter.default,
    "aten::gcd.out": aten.gcd.default,
    "aten::fmod.Tensor_out": aten.fmod.Tensor,
    "aten::remainder.Tensor_out": aten.remainder.Tensor,
    "aten::pow.Tensor_Tensor_out": aten.pow.Tensor_Tensor,
}
DIVIDING = {"aten::fmod.Tensor_out", "aten::remainder.Tensor_out"}


def nonzero(b: np.ndarray) -> np.ndarray:
    return np.where(b == 0, np.ones_like(b), b)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shapes", BINARY_SHAPES)
@pytest.mark.parametrize("name", list(TENSOR_OPS))
def test_binary_tensor(name, shapes, dtype):
    a, b = rand(shapes[0], dtype), rand(shapes[1], dtype)
    if name in DIVIDING:
        b = nonzero(b)
    if name == "aten::pow.Tensor_Tensor_out" and np.dtype(dtype).kind in "iu":
        b = np.asarray(np.abs(b) % 5, dtype=dtype)
    run(name, TENSOR_OPS[name], [a, b])


@pytest.mark.parametrize("dtypes", [(np.int32, np.float32), (np.uint8, np.int8),
                                    (np.float16, np.float64), (np.bool_, np.int64),
                                    (np.int16, np.bool_)])
@pytest.mark.parametrize("name", list(TENSOR_OPS))
def test_binary_tensor_promotes(name, dtypes):
    a, b = rand((3, 4), dtypes[0]), rand((4,), dtypes[1])
    if name in DIVIDING:
        b = nonzero(b)
    if name == "aten::pow.Tensor_Tensor_out":
        b = np.asarray(np.abs(b) % 4, dtype=b.dtype)
    run(name, TENSOR_OPS[name], [a, b])


def test_fmax_fmin_skip_nan():
    a = np.array([np.nan, 1.0, np.nan, -0.0, 3.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, 0.0, 2.0], np.float32)
    for op in ("fmax", "fmin"):
        run(f"aten::{op}.out", getattr(aten, op).default, [a, b])


def test_binary_nan_semantics():
    a = np.array([np.nan, 1.0, np.nan, -0.0, 3.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, 0.0, 3.0], np.float32)
    for name in ["aten::maximum.out", "aten::minimum.out", "aten::eq.Tensor_out",
                 "aten::ne.Tensor_out", "aten::lt.Tensor_out", "aten::fmod.Tensor_out",
                 "aten::remainder.Tensor_out", "aten::pow.Tensor_Tensor_out", "aten::atan2.out"]:
        run(name, TENSOR_OPS[name], [a, b])


def test_binary_channels_last():
    a = channels_last(rand((2, 3, 4, 5), np.float32))
    b = rand((3, 1, 1), np.float32)
    for name in ["aten::maximum.out", "aten::lt.Tensor_out", "aten::pow.Tensor_Tensor_out"]:
        run(name, TENSOR_OPS[name], [a, b], layout_like=a)


SCALAR_OPS = {
    "aten::eq.Scalar_out": aten.eq.Scalar, "aten::ne.Scalar_out": aten.ne.Scalar,
    "aten::lt.Scalar_out": aten.lt.Scalar, "aten::le.Scalar_out": aten.le.Scalar,
    "aten::gt.Scalar_out": aten.gt.Scalar, "aten::ge.Scalar_out": aten.ge.Scalar,
    "aten::bitwise_and.Scalar_out": aten.bitwise_and.Scalar,
    "aten::bitwise_or.Scalar_out": aten.bitwise_or.Scalar,
    "aten::bitwise_xor.Scalar_out": aten.bitwise_xor.Scalar,
    "aten::mul.Scalar_out": aten.mul.Scalar,
    "aten::div.Scalar_out": aten.div.Scalar,
    "aten::fmod.Scalar_out": aten.fmod.Scalar,
    "aten::remainder.Scalar_out": aten.remainder.Scalar,
    "aten::pow.Tensor_Scalar_out": aten.pow.Tensor_Scalar,
}


@pytest.mark.parametrize("scalar", [3, -2, 2.5, 0.5, 2, True, 0])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", list(SCALAR_OPS))
def test_binary_scalar(name, dtype, scalar):
    a = rand((2, 3), dtype)
    run(name, SCALAR_OPS[name], [a, scalar])


@pytest.mark.parametrize("scalar", [3, 2.5, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_sub_scalar(op, dtype, scalar):
    a = rand((2, 3), dtype)
    alpha = 2 if dtype != np.bool_ else True
    eager = getattr(aten, op).Scalar
    run(f"aten::{op}.Scalar_out", lambda x, s, al: eager(x, s, alpha=al), [a, scalar, alpha])


@pytest.mark.parametrize("base", [2, 2.5, -1, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_pow_scalar_base(base, dtype):
    e = rand((2, 3), dtype)
    if np.dtype(dtype).kind in "iu":
        e = np.asarray(np.abs(e) % 5, dtype=dtype)
    run("aten::pow.Scalar_out", aten.pow.Scalar, [base, e])


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shapes", BINARY_SHAPES)
def test_div_mode(shapes, dtype, mode):
    a, b = rand(shapes[0], dtype), rand(shapes[1], dtype)
    if np.dtype(dtype).kind in "iub":
        b = nonzero(b)
    run("aten::div.out_mode", lambda x, y, m: aten.div.Tensor_mode(x, y, rounding_mode=m),
        [a, b, mode])


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("scalar", [3, -2, 2.5, -0.5])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_div_scalar_mode(dtype, scalar, mode):
    a = rand((2, 3), dtype)
    run("aten::div.Scalar_mode_out",
        lambda x, s, m: aten.div.Scalar_mode(x, s, rounding_mode=m), [a, scalar, mode])


def test_float_division_by_zero_and_signs():
    a = np.array([-7.0, 7.0, 1.0, -1.0, 0.0, -0.0, 5.5], np.float64)
    b = np.array([2.0, -2.0, 0.0, 0.0, 0.0, 3.0, -0.5], np.float64)
    for mode in ["trunc", "floor"]:
        run("aten::div.out_mode", lambda x, y, m: aten.div.Tensor_mode(x, y, rounding_mode=m),
            [a, b, mode])
    run("aten::remainder.Tensor_out", aten.remainder.Tensor, [a, b])
    run("aten::fmod.Tensor_out", aten.fmod.Tensor, [a, b])


@pytest.mark.parametrize("name", ["aten::remainder.Tensor_out", "aten::fmod.Tensor_out"])
def test_integer_division_by_zero_fails(name):
    a = np.array([1, 2], np.int32)
    b = np.array([1, 0], np.int32)
    with pytest.raises(RuntimeError):
        _C.call_kernel(name, [a, b, np.empty(2, np.int32)])
    with pytest.raises(RuntimeError):
        _C.call_kernel("aten::div.out_mode", [a, b, "floor", np.empty(2, np.int32)])


# --- where, clamp.Tensor -----------------------------------------------------------

@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int32, np.float16),
                                    (np.bool_, np.int8), (np.uint8, np.int64),
                                    (np.float64, np.float64), (np.bool_, np.bool_)])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 3)), ((2, 1), (3,), ()),
                                    ((), (2, 3), (1, 3)), ((0, 3), (3,), (1,))])
def test_where(shapes, dtypes):
    c = rand(shapes[0], np.bool_)
    x, y = rand(shapes[1], dtypes[0]), rand(shapes[2], dtypes[1])
    run("aten::where.self_out", aten.where.self, [c, x, y])


def test_where_channels_last():
    c = channels_last(rand((2, 3, 4, 5), np.bool_))
    x = channels_last(rand((2, 3, 4, 5), np.float32))
    y = np.full((5,), 0.5, np.float32)
    run("aten::where.self_out", aten.where.self, [c, x, y], layout_like=x)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("which", ["both", "min", "max"])
def test_clamp_tensor(dtype, which):
    x = rand((3, 4), dtype)
    lo = rand((4,), dtype) if which != "max" else None
    hi = rand((3, 1), dtype) if which != "min" else None
    run("aten::clamp.Tensor_out", aten.clamp.Tensor, [x, lo, hi])


def test_clamp_tensor_nan_and_promotion():
    x = np.array([1.0, np.nan, -5.0, 7.0], np.float32)
    lo = np.array([np.nan, 0.0, 0.0, 0.0], np.float32)
    hi = np.array(5, np.int64)
    run("aten::clamp.Tensor_out", aten.clamp.Tensor, [x, lo, hi])
    bound = np.array(1.5, np.float64)
    run("aten::clamp.Tensor_out", aten.clamp.Tensor, [rand((3,), np.int32), bound, None])


# --- fills -------------------------------------------------------------------------

@pytest.mark.parametrize("value", [2, -1, 2.7, True, 0.0])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_fills(dtype, value):
    x = rand((2, 3), dtype)
    run("aten::fill.Scalar_out", aten.fill.Scalar, [x, value])
    want = aten.full_like.default(t(x), value)
    out = np.empty(x.shape, x.dtype)
    _C.call_kernel("aten::full_like.out", [x, value, None, out])
    check(out, want)
    want = aten.scalar_tensor.default(value, dtype=want.dtype)
    out = np.empty((), x.dtype)
    _C.call_kernel("aten::scalar_tensor.out", [value, out])
    check(out, want)


def test_fill_channels_last_and_overflow():
    x = channels_last(rand((1, 2, 2, 3), np.float16))
    out = channels_last(np.empty(x.shape, np.float16))
    _C.call_kernel("aten::full_like.out", [x, 1.5, None, out])
    assert (out == 1.5).all()
    with pytest.raises(RuntimeError):
        _C.call_kernel("aten::fill.Scalar_out", [rand((2,), np.int8), 300, np.empty(2, np.int8)])
