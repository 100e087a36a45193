"""dim_order_ops::_to_dim_order_copy.out and _clone_dim_order.out, the
kernels other exporters' programs name, through ``ember._C.call_kernel``
against eager's ``.to(dtype, memory_format=...)`` / ``.clone(memory_format=...)``:
across dtypes, contiguous and channels-last in and out, with dtype
conversion, and a dim_order that disagrees with out's layout (an error
naming both)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

import ember.exir.operator.dim_order_ops  # noqa: E402,F401

TO = "dim_order_ops::_to_dim_order_copy.out"
CLONE = "dim_order_ops::_clone_dim_order.out"
FORMATS = {
    "contiguous": (torch.contiguous_format, [0, 1, 2, 3]),
    "channels_last": (torch.channels_last, [0, 2, 3, 1]),
}
DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.int8,
          torch.uint8, torch.bool]


def sample(dtype: torch.dtype, layout: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 4, 5, generator=g) * 50
    x = x > 0 if dtype == torch.bool else x.to(dtype)
    return x.contiguous(memory_format=FORMATS[layout][0])


def empty_out(dtype: torch.dtype, layout: str) -> np.ndarray:
    return torch.empty(2, 3, 4, 5, dtype=dtype).contiguous(
        memory_format=FORMATS[layout][0]).numpy()


def check_same(out: np.ndarray, want: torch.Tensor) -> None:
    got = torch.from_numpy(out)
    assert got.dtype == want.dtype
    assert got.stride() == want.stride()  # the layout, not only the values
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("src", FORMATS)
@pytest.mark.parametrize("dst", FORMATS)
def test_clone_dim_order_matches_eager_clone(dtype, src, dst):
    x = sample(dtype, src)
    out = empty_out(dtype, dst)
    _C.call_kernel(CLONE, [x.numpy(), False, FORMATS[dst][1], out])
    check_same(out, x.clone(memory_format=FORMATS[dst][0]))
    # The Python definition (the reference programs are exported with) agrees.
    ref = torch.ops.dim_order_ops._clone_dim_order(x, dim_order=FORMATS[dst][1])
    check_same(out, ref)


@pytest.mark.parametrize("src_dtype,dst_dtype", [
    (torch.float32, torch.float16), (torch.float32, torch.int32), (torch.float64, torch.float32),
    (torch.int64, torch.float32), (torch.uint8, torch.int64), (torch.bool, torch.float32),
    (torch.float32, torch.bool), (torch.float16, torch.float64), (torch.float32, torch.float32),
], ids=str)
@pytest.mark.parametrize("src", FORMATS)
@pytest.mark.parametrize("dst", FORMATS)
def test_to_dim_order_copy_matches_eager_to(src_dtype, dst_dtype, src, dst):
    x = sample(src_dtype, src)
    out = empty_out(dst_dtype, dst)
    _C.call_kernel(TO, [x.numpy(), False, FORMATS[dst][1], out])
    check_same(out, x.to(dst_dtype, memory_format=FORMATS[dst][0]))
    ref = torch.ops.dim_order_ops._to_dim_order_copy(x, dtype=dst_dtype, dim_order=FORMATS[dst][1])
    check_same(out, ref)


def test_none_means_contiguous():
    x = sample(torch.float32, "channels_last")
    out = empty_out(torch.float32, "contiguous")
    _C.call_kernel(TO, [x.numpy(), False, None, out])
    check_same(out, x.contiguous())


def test_zero_dim_and_empty():
    x = torch.tensor(3.5)
    out = np.zeros((), np.float64)
    _C.call_kernel(TO, [x.numpy(), False, [], out])
    assert out == 3.5
    empty = np.empty((0, 3, 2, 2), np.float32)
    _C.call_kernel(CLONE, [empty, False, None, np.empty((0, 3, 2, 2), np.float32)])


@pytest.mark.parametrize("name", [TO, CLONE])
def test_dim_order_that_disagrees_with_out_is_an_error(name):
    x = sample(torch.float32, "contiguous")
    out = empty_out(torch.float32, "contiguous")
    with pytest.raises(Exception, match=r"dim_order \[0, 2, 3, 1\] disagrees with out's dim "
                                        r"order \[0, 1, 2, 3\]"):
        _C.call_kernel(name, [x.numpy(), False, [0, 2, 3, 1], out])


def test_clone_refuses_a_dtype_change():
    x = sample(torch.float32, "contiguous")
    with pytest.raises(Exception, match="float64"):
        _C.call_kernel(CLONE, [x.numpy(), False, None, empty_out(torch.float64, "contiguous")])
