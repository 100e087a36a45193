"""Ember kernels of non-core ops export leaves for selection (kthvalue, median, nanmedian, mode)
against eager.

Values must equal eager's exactly; indices equal eager's where eager is deterministic (distinct
values, the first NaN of a median row, mode on short rows) and otherwise must point at an element
equal to the value. Then the ops once through the whole flow (export -> to_edge -> to_executorch ->
runtime).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

aten = torch.ops.aten
REAL = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16,
        torch.int32, torch.int64, torch.uint8]


def sample(shape, dtype, kind="random", seed=0):
    g = torch.Generator().manual_seed(seed)
    if kind == "ties" or not dtype.is_floating_point:
        x = torch.randint(-2, 3, shape, generator=g).to(torch.float64)
        if dtype in (torch.uint8, torch.bool):
            x = x.abs()
        return x.to(dtype)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    if kind == "nan_inf":
        flat = x.view(-1)
        flat[::7] = float("nan")
        flat[3::11] = float("inf")
        flat[5::13] = float("-inf")
    return x.to(dtype)


def layouts(x):
    yield "contiguous", x
    if x.dim() == 2:
        yield "transposed", x.t().contiguous().t()


def call_dim_op(op, x, dim, keepdim, k=None):
    want = getattr(torch, op)(x, k, dim, keepdim) if k is not None else getattr(torch, op)(
        x, dim, keepdim)
    name = {"kthvalue": "aten::kthvalue.values", "median": "aten::median.dim_values",
            "nanmedian": "aten::nanmedian.dim_values", "mode": "aten::mode.values"}[op]
    results = []
    for layout, xin in layouts(x):
        v, i = torch.empty_like(want.values), torch.empty_like(want.indices)
        args = [xin] + ([k] if k is not None else []) + [dim, keepdim, v, i]
        _C.call_kernel(name, args, returns=[len(args) - 2, len(args) - 1])
        results.append((layout, v, i))
    return want, results


def check_indices_point_at_values(x, dim, keepdim, v, i):
    vi = i if keepdim else i.unsqueeze(dim)
    vv = v if keepdim else v.unsqueeze(dim)
    picked = x.gather(dim, vi)
    same = (picked == vv) | (picked.isnan() & vv.isnan())
    assert bool(same.all()), (x, v, i)


SEL_CASES = [(dtype, kind) for dtype in REAL for kind in ("random", "ties", "nan_inf")
             if kind != "nan_inf" or dtype.is_floating_point]


@pytest.mark.parametrize("op", ["kthvalue", "median", "nanmedian"])
@pytest.mark.parametrize("dtype,kind", SEL_CASES)
def test_kthvalue_median_nanmedian(op, dtype, kind):
    x = sample((5, 7), dtype, kind)
    for dim, keepdim in ((0, False), (1, True), (-1, False)):
        k = None
        if op == "kthvalue":
            k = 3 if dim == 0 else 5
        want, results = call_dim_op(op, x, dim, keepdim, k)
        for layout, v, i in results:
            torch.testing.assert_close(v, want.values, rtol=0, atol=0, equal_nan=True,
                                       msg=f"{layout} dim={dim}")
            if kind == "random" and dtype in (torch.float32, torch.float64) and op != "nanmedian":
                # Distinct values (and for median the first NaN of a row): eager's indices.
                assert torch.equal(i, want.indices), (layout, dim, i, want.indices)
            elif kind == "random" and dtype in (torch.float32, torch.float64):
                rows_all_nan = want.values.isnan()
                assert torch.equal(i[~rows_all_nan], want.indices[~rows_all_nan])
            check_indices_point_at_values(x, dim if dim >= 0 else x.dim() + dim, keepdim, v, i)


def test_median_nan_rules():
    nan = float("nan")
    x = torch.tensor([[3.0, nan, 1.0, nan, 2.0], [nan, nan, nan, nan, nan], [4.0, 1.0, 3.0, 2.0, 0.0]])
    for op in ("median", "nanmedian"):
        want, results = call_dim_op(op, x, 1, False)
        for layout, v, i in results:
            torch.testing.assert_close(v, want.values, rtol=0, atol=0, equal_nan=True)
            # An all-NaN row's nanmedian index is eager's selection's (unspecified); Ember: the first.
            assert torch.equal(i[[0, 2]], want.indices[[0, 2]]), (op, layout, i, want.indices)
            assert i[1] == 0
    # Lower median of an even count; median/nanmedian over everything.
    y = torch.tensor([4.0, 1.0, 3.0, 2.0])
    for op, t, want in (("median", y, 2.0), ("nanmedian", y, 2.0), ("median", x, nan),
                        ("nanmedian", x, 2.0)):
        out = torch.empty(())
        _C.call_kernel(f"aten::{op}.out", [t, out])
        assert (math.isnan(out.item()) and math.isnan(want)) or out.item() == want, (op, out)


@pytest.mark.parametrize("op", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype,kind", SEL_CASES)
def test_median_all_elements(op, dtype, kind):
    for shape in ((5, 7), (4, 3, 2), ()):
        x = sample(shape, dtype, kind)
        want = getattr(torch, op)(x)
        for layout, xin in layouts(x):
            out = torch.empty((), dtype=dtype)
            _C.call_kernel(f"aten::{op}.out", [xin, out])
            torch.testing.assert_close(out, want, rtol=0, atol=0, equal_nan=True, msg=layout)
    for dtype in (torch.float32, torch.int32, torch.int64, torch.int8, torch.uint8):
        e = torch.zeros((0, 3), dtype=dtype)
        out = torch.empty((), dtype=dtype)
        _C.call_kernel(f"aten::{op}.out", [e, out])
        torch.testing.assert_close(out, getattr(torch, op)(e), equal_nan=True)


@pytest.mark.parametrize("dtype,kind", SEL_CASES + [(torch.bool, "ties")])
def test_mode(dtype, kind):
    if kind == "nan_inf":
        return  # eager's mode with NaN is unspecified (its sort sees no order); see below
    x = sample((5, 7), dtype, kind)
    for dim, keepdim in ((0, False), (1, True), (-1, False)):
        want, results = call_dim_op("mode", x, dim, keepdim)
        for layout, v, i in results:
            torch.testing.assert_close(v, want.values, rtol=0, atol=0, msg=f"{layout} dim={dim}")
            # Rows this short: eager returns the last occurrence, as Ember.
            assert torch.equal(i, want.indices), (layout, dim, i, want.indices)


def test_mode_rules_long_rows_and_nan():
    nan = float("nan")
    # Most frequent, smallest of equally frequent, last occurrence; NaNs count as one value.
    x = torch.tensor([[1.0, 2.0, 2.0, 1.0, 3.0], [nan, 2.0, nan, 1.0, 2.0], [nan, nan, 1.0, 5.0, 5.0],
                      [nan, 0.0, nan, nan, 0.0]])
    want_v = torch.tensor([1.0, 2.0, 5.0, nan])
    want_i = torch.tensor([3, 4, 4, 3])
    v, i = torch.empty(4), torch.empty(4, dtype=torch.int64)
    _C.call_kernel("aten::mode.values", [x, 1, False, v, i], returns=[3, 4])
    torch.testing.assert_close(v, want_v, equal_nan=True)
    assert torch.equal(i, want_i), i
    # Long rows: eager's index is unspecified; the value is eager's, the index Ember's rule.
    x = sample((3, 300), torch.float32, "ties", seed=3)
    want = torch.mode(x, 1)
    v, i = torch.empty(3), torch.empty(3, dtype=torch.int64)
    _C.call_kernel("aten::mode.values", [x, 1, False, v, i], returns=[3, 4])
    assert torch.equal(v, want.values)
    last = torch.tensor([int((row == val).nonzero().max()) for row, val in zip(x, v)])
    assert torch.equal(i, last)


def test_selection_empty_0d_and_errors():
    s = torch.tensor(2.5)
    for name, args in (("aten::kthvalue.values", [s, 1, 0, False]),
                       ("aten::median.dim_values", [s, 0, False]),
                       ("aten::nanmedian.dim_values", [s, -1, True]),
                       ("aten::mode.values", [s, 0, False])):
        v, i = torch.empty(()), torch.empty((), dtype=torch.int64)
        _C.call_kernel(name, args + [v, i], returns=[len(args), len(args) + 1])
        assert v.item() == 2.5 and i.item() == 0, name
    # An empty kept dim: empty results; an empty reduced dim: eager's error.
    e = torch.zeros((0, 3))
    v, i = torch.empty(0), torch.empty(0, dtype=torch.int64)
    _C.call_kernel("aten::median.dim_values", [e, 1, False, v, i], returns=[3, 4])
    with pytest.raises(RuntimeError, match="self"):
        _C.call_kernel("aten::median.dim_values", [e, 0, False, torch.empty(3),
                                                   torch.empty(3, dtype=torch.int64)],
                       returns=[3, 4])
    with pytest.raises(RuntimeError, match="k: 8 is out of range"):
        _C.call_kernel("aten::kthvalue.values", [torch.zeros(4, 7), 8, 1, False, torch.empty(4),
                                                 torch.empty(4, dtype=torch.int64)],
                       returns=[4, 5])
    with pytest.raises(RuntimeError, match="self: unsupported dtype bool"):
        _C.call_kernel("aten::median.out", [torch.zeros(3, dtype=torch.bool),
                                            torch.empty((), dtype=torch.bool)], check_dtypes=False)
    with pytest.raises(RuntimeError, match="indices: expected dtype int64"):
        _C.call_kernel("aten::mode.values", [torch.zeros(3), 0, False, torch.empty(()),
                                             torch.empty((), dtype=torch.int32)], returns=[3, 4])


def run_program(module, *args):
    from ember.exir import to_edge
    from ember.runtime import Runtime

    program = to_edge(torch.export.export(module, args)).to_executorch()
    return Runtime.get().load_program(program.buffer).load_method("forward").execute(list(args))


class Selection(torch.nn.Module):
    def forward(self, x):
        k = torch.kthvalue(x, 2, 1)
        m = torch.median(x, 0, keepdim=True)
        n = torch.nanmedian(x, 1)
        o = torch.mode(x.round(), 1)
        return (k.values, k.indices, m.values, m.indices, n.values, torch.median(x),
                torch.nanmedian(x), o.values)


def test_selection_through_the_whole_flow():
    x = sample((6, 9), torch.float32)
    x[2, 3] = float("nan")
    got = run_program(Selection(), x)
    want = Selection()(x)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(torch.as_tensor(g), w, rtol=0, atol=0, equal_nan=True)
