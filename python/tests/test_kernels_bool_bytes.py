"""Bool tensors whose bytes are not 0/1 (issue 7), through the bindings.

NumPy lets a uint8 buffer be viewed as bool without normalising it, which is
what planned memory reused across dtypes looks like to a kernel. Kernels must
read any non-zero byte as true (C++ `bool` loads of such bytes are undefined
behaviour; the C++ twin of this test, kernels/portable/test/bool_storage_test.cpp,
runs under UBSan) and write 0/1.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")


def odd_bools(values: list[int]) -> np.ndarray:
    return np.array(values, np.uint8).view(np.bool_)


A = [0, 1, 2, 255, 0, 128]
B = [2, 254, 0, 7, 0, 1]


def truth(values: list[int]) -> torch.Tensor:
    return torch.tensor([v != 0 for v in values])


@pytest.mark.parametrize("name, eager", [
    ("aten::logical_and.out", torch.logical_and),
    ("aten::logical_xor.out", torch.logical_xor),
    ("aten::bitwise_and.Tensor_out", torch.bitwise_and),
    ("aten::eq.Tensor_out", torch.eq),
    ("aten::ne.Tensor_out", torch.ne),
    ("aten::lt.Tensor_out", torch.lt),
    ("aten::mul.out", torch.mul),
    ("aten::maximum.out", torch.maximum),
])
def test_binary_reads_nonzero_bytes_as_true(name, eager):
    out = np.full(len(A), 0xAA, np.uint8).view(np.bool_)
    _C.call_kernel(name, [odd_bools(A), odd_bools(B), out])
    want = eager(truth(A), truth(B))
    assert set(out.view(np.uint8).tolist()) <= {0, 1}
    np.testing.assert_array_equal(out, want.numpy())


def test_reductions_and_conversions_count_nonzero_bytes_once():
    x = odd_bools(A)
    total = np.empty((), np.int64)
    _C.call_kernel("aten::sum.IntList_out", [x, None, False, None, total])
    assert int(total) == 4
    as_float = np.empty(len(A), np.float32)
    _C.call_kernel("aten::_to_copy.out", [x, False, None, as_float])
    np.testing.assert_array_equal(as_float, truth(A).float().numpy())
    picked = np.empty(len(A), np.float32)
    _C.call_kernel("aten::where.self_out",
                   [x, np.ones(len(A), np.float32), np.zeros(len(A), np.float32), picked])
    np.testing.assert_array_equal(picked, truth(A).float().numpy())
