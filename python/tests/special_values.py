"""Ember's documented answers for special inputs (docs/special-values.md).

The table is the contract, checked bit for bit (sign of zero included, any
NaN for NaN); it follows IEEE 754 and the C library's rules, and the limit
where IEEE arithmetic would give NaN for a defined limit (gelu(-inf) = -0).
Eager is not the reference here: its answers for these inputs depend on the
CPU path it dispatches to (gelu(+inf) is NaN on torch's AVX-512 kernels,
gelu(-inf) NaN on its AVX2 ones).

Finite values away from the specials are checked elsewhere against eager or
against a float64 reference within per-op ulp bounds (ULP_BOUNDS).
"""

from __future__ import annotations

import math

import numpy as np

NAN = math.nan
INF = math.inf
HALF_PI = math.pi / 2

# Inputs, in order, and each op's answers for them.
INPUTS = [NAN, INF, -INF, 0.0, -0.0]
TABLE: dict[str, list[float]] = {
    "exp": [NAN, INF, 0.0, 1.0, 1.0],
    "exp2": [NAN, INF, 0.0, 1.0, 1.0],
    "lgamma": [NAN, INF, INF, INF, INF],
    "expm1": [NAN, INF, -1.0, 0.0, -0.0],
    "sigmoid": [NAN, 1.0, 0.0, 0.5, 0.5],
    "tanh": [NAN, 1.0, -1.0, 0.0, -0.0],
    "erf": [NAN, 1.0, -1.0, 0.0, -0.0],
    "gelu_none": [NAN, INF, -0.0, 0.0, -0.0],
    "gelu_tanh": [NAN, INF, -0.0, 0.0, -0.0],
    "log": [NAN, INF, NAN, -INF, -INF],
    "log1p": [NAN, INF, NAN, 0.0, -0.0],
    "sqrt": [NAN, INF, NAN, 0.0, -0.0],
    "rsqrt": [NAN, 0.0, NAN, INF, -INF],
    "reciprocal": [NAN, 0.0, -0.0, INF, -INF],
    "sin": [NAN, NAN, NAN, 0.0, -0.0],
    "cos": [NAN, NAN, NAN, 1.0, 1.0],
    "atan": [NAN, HALF_PI, -HALF_PI, 0.0, -0.0],
    "asinh": [NAN, INF, -INF, 0.0, -0.0],
    "abs": [NAN, INF, INF, 0.0, 0.0],
    "neg": [NAN, -INF, INF, -0.0, 0.0],
    "floor": [NAN, INF, -INF, 0.0, -0.0],
    "ceil": [NAN, INF, -INF, 0.0, -0.0],
    "trunc": [NAN, INF, -INF, 0.0, -0.0],
    "round": [NAN, INF, -INF, 0.0, -0.0],
}

# Max error in ulps of the result's dtype (float32), against a float64
# reference, for finite inputs of the fast float32 paths (fast_math.h).
ULP_BOUNDS = {"exp": 1.0, "expm1": 1.5, "sigmoid": 3.0, "tanh": 2.5, "erf": 1.5}


def expected(op: str, dtype) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, answers) in `dtype` for `op`'s row of the table."""
    return np.array(INPUTS, dtype), np.array(TABLE[op], dtype)


def same_special(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal values with equal signs (±0 apart); NaN matches any NaN."""
    both_nan = np.isnan(got) & np.isnan(want)
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    return bool(np.all(both_nan | same))


def reference_f64(op: str, x: np.ndarray) -> np.ndarray:
    """The float64 value of `op` at float32 inputs `x` (libm, correctly
    rounded to float32 within half an ulp for these functions)."""
    xd = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if op == "exp":
            return np.exp(xd)
        if op == "expm1":
            return np.expm1(xd)
        if op == "tanh":
            return np.tanh(xd)
        if op == "sigmoid":
            return np.where(xd >= 0, 1 / (1 + np.exp(-xd)), np.exp(xd) / (1 + np.exp(xd)))
        if op == "erf":
            return np.array([math.erf(v) if not math.isinf(v) else math.copysign(1, v)
                             for v in xd.tolist()])
    raise KeyError(op)


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the float32 ulp at ref (subnormal ulp floor);
    0 where got is ref rounded to float32 (infinities included) or both NaN."""
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32)
    ulp = np.spacing(np.abs(ref32)).astype(np.float64)
    ulp = np.maximum(ulp, 2.0**-149)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - ref) / ulp
    same = (got == ref32) | (np.isnan(got) & np.isnan(ref))  # includes overflow to inf
    return np.where(same, 0.0, err)
