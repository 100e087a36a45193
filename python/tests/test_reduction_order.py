"""float32/float64 sum and mean of contiguous rows add in Ember's documented
order (kernels/portable/util/cascade_sum.h), on every host.

The reference is summation_model.py, an independent NumPy model of that order:
the kernel must give its bits exactly, whatever the CPU or thread count. Rows
with a wide dynamic range make every reassociation visible in the last bits,
and the +-2^k probes below cancel only when two given elements meet in the
same partial sum, so a different summation tree changes the result by whole
units, not ulps.

Against eager: within the error bound of any summation order (stated below).
Ember's order was chosen to coincide with the one eager's AVX2 kernels use,
so where torch dispatches to AVX2 the results are also bit-identical to eager
(checked there as an extra; eager's order on other CPU paths differs, Ember's
does not).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from summation_model import cascade_sum_rows

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

EAGER_ORDER_IS_EMBERS = torch.backends.cpu.get_cpu_capability() == "AVX2"

RNG = np.random.default_rng(7)

# Row lengths around every boundary of the order: the short-row paths (< 8
# floats, < 4 doubles), whole vectors, 4-vector blocks, leftover vectors and
# tails, and the cascade levels (16 blocks; 256 blocks).
LENGTHS = sorted(
    set(range(0, 70))
    | {95, 96, 97, 127, 128, 129, 255, 256, 257, 511, 512, 513, 544, 576, 600, 1000, 1023, 1024}
    | {4095, 4096, 4097, 8191, 8192, 8200, 16384 + 40, 40000, 131072 + 8 * 3 + 5}
)


def wide_range(shape, dtype) -> np.ndarray:
    """Values over many binades, both signs: any change of order shows."""
    values = RNG.standard_normal(shape) * np.exp(RNG.standard_normal(shape) * 4)
    return values.astype(dtype)


def run(name: str, x: np.ndarray, dim, out_shape) -> np.ndarray:
    out = np.zeros(out_shape, dtype=x.dtype)
    _C.call_kernel(name, [x, dim, False, None, out])
    return out


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def error_bound(x: np.ndarray) -> np.ndarray:
    """Per row: (n - 1) * u * sum|x|, the error bound of summing in any order
    (u = unit roundoff), so twice it bounds the distance between two orders."""
    n = x.shape[-1]
    u = np.finfo(x.dtype).eps / 2
    return max(n - 1, 0) * u * np.abs(x.astype(np.float64)).sum(-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
def test_sum_and_mean_rows_in_embers_order(n, dtype):
    rows = 3 if n > 5000 else 17
    x = wide_range((rows, n), dtype)
    got_sum = run("aten::sum.IntList_out", x, [-1], (rows,))
    got_mean = run("aten::mean.out", x, [-1], (rows,))
    model = cascade_sum_rows(x)
    assert same_bits(got_sum, model), (n, got_sum - model)
    if n > 0:
        with np.errstate(all="ignore"):
            want_mean = model / dtype(n)
        assert same_bits(got_mean, want_mean), (n, got_mean - want_mean)
    else:
        assert np.isnan(got_mean).all()
    # Close to the exact sum, and so to eager, whatever order eager takes.
    exact = np.array([math.fsum(r) for r in x.astype(np.float64).tolist()])
    bound = error_bound(x)
    assert np.all(np.abs(got_sum.astype(np.float64) - exact) <= bound), n
    eager = torch.from_numpy(x).sum(-1).numpy()
    assert np.all(np.abs(got_sum.astype(np.float64) - eager) <= 2 * bound), n
    if EAGER_ORDER_IS_EMBERS:
        assert same_bits(got_sum, eager), (n, got_sum - eager)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [7, 16, 33, 48, 100, 600])
def test_cancellation_probes(n, dtype):
    """Rows of ones with +M at i and -M at j (M absorbs every partial sum of
    ones): the result counts the ones outside the smallest partial sum that
    holds both i and j, so it encodes the summation tree itself."""
    big = 2.0**40 if dtype == np.float32 else 2.0**80
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    x = np.ones((len(pairs), n), dtype=dtype)
    for r, (i, j) in enumerate(pairs):
        x[r, i], x[r, j] = big, -big
    got = run("aten::sum.IntList_out", x, [-1], (len(pairs),))
    assert same_bits(got, cascade_sum_rows(x))
    if EAGER_ORDER_IS_EMBERS:
        assert same_bits(got, torch.from_numpy(x).sum(-1).numpy())


def test_mean_over_spatial_dims_of_nchw():
    """The quantized-CNN case: mean over (H, W) is a contiguous row per (N, C)."""
    for h, w in [(1, 1), (2, 3), (4, 4), (7, 7), (14, 14)]:
        x = wide_range((2, 5, h, w), np.float32)
        out = np.zeros((2, 5, 1, 1), dtype=np.float32)
        _C.call_kernel("aten::mean.out", [x, [2, 3], True, None, out])
        want = (cascade_sum_rows(x.reshape(10, h * w)) / np.float32(h * w)).reshape(2, 5, 1, 1)
        assert same_bits(out, want), (h, w)
        if EAGER_ORDER_IS_EMBERS:
            assert same_bits(out, torch.from_numpy(x).mean((2, 3), keepdim=True).numpy())


def test_full_reduction_and_signed_zero():
    x = wide_range((1000,), np.float32)
    out = np.zeros((), dtype=np.float32)
    _C.call_kernel("aten::sum.out", [x, None, out])
    assert same_bits(out.reshape(1), cascade_sum_rows(x.reshape(1, -1)))
    if EAGER_ORDER_IS_EMBERS:
        assert same_bits(out, torch.from_numpy(x).sum().numpy())
    for n in [1, 5, 9, 40]:
        zeros = np.full((2, n), -0.0, dtype=np.float32)
        got = run("aten::sum.IntList_out", zeros, [-1], (2,))
        assert same_bits(got, np.zeros(2, np.float32))  # +0: every accumulator starts at +0


def test_special_values_propagate():
    x = wide_range((4, 50), np.float32)
    x[0, 3] = np.inf
    x[1, 49] = np.nan
    x[2, 10], x[2, 20] = np.inf, -np.inf
    got = run("aten::sum.IntList_out", x, [-1], (4,))
    assert same_bits(got, cascade_sum_rows(x))
    assert np.isinf(got[0]) and got[0] > 0 and np.isnan(got[1]) and np.isnan(got[2])
