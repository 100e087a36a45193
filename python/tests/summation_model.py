"""An independent NumPy model of Ember's float summation order
(kernels/portable/util/cascade_sum.h), row by row.

Every step is one IEEE add of two float32 (or float64) NumPy arrays, one
element per row, so the model gives the bits the documented order gives on
any host. The kernel must match it exactly; tests/test_reduction_order.py
compares the two on every machine.
"""

from __future__ import annotations

import numpy as np

CHUNK = 16  # blocks per cascade level


def cascade_sum_rows(x: np.ndarray) -> np.ndarray:
    """Sums each row of the 2-D float32/float64 array `x` in Ember's order."""
    with np.errstate(all="ignore"):  # inf - inf and overflow are part of the contract
        return _sum_rows(x)


def _sum_rows(x: np.ndarray) -> np.ndarray:
    rows, n = x.shape
    dt = x.dtype.type
    lanes = 32 // x.dtype.itemsize  # W: 8 float, 4 double
    zero = np.zeros(rows, x.dtype)
    if n < lanes:
        s = zero.copy()
        if lanes == 8 and n >= 4:
            s = s + x[:, 0]
            for i in range(4, n):
                s = s + x[:, i]
            return ((s + x[:, 1]) + x[:, 2]) + x[:, 3]
        for i in range(n):
            s = s + x[:, i]
        return s

    vectors = n // lanes
    blocks = vectors // 4

    def vec(v: int) -> np.ndarray:
        return x[:, v * lanes:(v + 1) * lanes]

    acc = [np.zeros((rows, lanes), x.dtype) for _ in range(4)]

    def add_block(b: int) -> None:
        for j in range(4):
            acc[j] = acc[j] + vec(b * 4 + j)

    if blocks < CHUNK:
        for b in range(blocks):
            add_block(b)
    else:
        levels: list[list[np.ndarray]] = []
        carries: list[int] = []
        for b0 in range(0, blocks, CHUNK):
            b1 = min(blocks, b0 + CHUNK)
            for b in range(b0, b1):
                add_block(b)
            if b1 - b0 < CHUNK:
                break
            carry = acc
            acc = [np.zeros((rows, lanes), x.dtype) for _ in range(4)]
            level = 0
            while True:
                if level == len(levels):
                    levels.append([np.zeros((rows, lanes), x.dtype) for _ in range(4)])
                    carries.append(0)
                levels[level] = [levels[level][j] + carry[j] for j in range(4)]
                carries[level] += 1
                if carries[level] < CHUNK:
                    break
                carries[level] = 0
                carry = levels[level]
                levels[level] = [np.zeros((rows, lanes), x.dtype) for _ in range(4)]
                level += 1
        for lv in levels:
            acc = [acc[j] + lv[j] for j in range(4)]
    for v in range(blocks * 4, vectors):
        acc[0] = acc[0] + vec(v)
    a0 = ((acc[0] + acc[1]) + acc[2]) + acc[3]
    if vectors * lanes < n:
        tail = zero.copy()
        for i in range(vectors * lanes, n):
            tail = tail + x[:, i]
        a0[:, 0] = a0[:, 0] + tail
    s = zero.copy()
    for k in range(lanes):
        s = s + a0[:, k]
    assert s.dtype == dt
    return s
