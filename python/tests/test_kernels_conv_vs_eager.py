"""Convolution's direct path (3-D, float16, integers) against PyTorch eager.

Same contract as test_kernels_vs_eager.py: NumPy inputs, the kernel through
``ember._C.call_kernel``, compared with eager. The 1-D/2-D float32/float64 GEMM
path is covered there; bfloat16 runs through the same code as float16 (in the
conformance sweep, which can feed it). Transposed convolution (every path and
dtype, bfloat16 included through torch tensors) has its own section below.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

RNG = np.random.default_rng(7)
# (atol, rtol): float16 rounds the float32 sum once; float32 sums in another order.
TOLERANCES = {np.dtype(np.float16): (2e-2, 1e-2), np.dtype(np.float32): (1e-4, 1e-4),
              np.dtype(np.float64): (1e-10, 1e-10)}


def rand(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return RNG.integers(-5, 6, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def conv(x, weight, bias, stride, padding, dilation, groups, layout="contiguous"):
    n = x.ndim - 2
    try:
        want = torch.ops.aten.convolution.default(
            torch.from_numpy(x), torch.from_numpy(weight),
            None if bias is None else torch.from_numpy(bias), stride, padding, dilation, False,
            [0] * n, groups)
    except (RuntimeError, NotImplementedError):
        pytest.skip(f"eager has no CPU convolution for {x.dtype}")
    out = np.empty(tuple(want.shape), x.dtype)
    if layout == "channels_last":
        perm = (0, *range(2, x.ndim), 1)
        inv = tuple(np.argsort(perm))
        x = np.ascontiguousarray(x.transpose(perm)).transpose(inv)
        weight = np.ascontiguousarray(weight.transpose(perm)).transpose(inv)
        out = np.ascontiguousarray(out.transpose(perm)).transpose(inv)
    _C.call_kernel("aten::convolution.out",
                   [x, weight, bias, stride, padding, dilation, False, [0] * n, groups, out])
    want = want.numpy()
    if out.dtype in TOLERANCES:
        atol, rtol = TOLERANCES[out.dtype]
        np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), atol=atol,
                                   rtol=rtol)
    else:
        np.testing.assert_array_equal(out, want)


CONV3D_CASES = [
    # (N, C, D, H, W, OC, K, stride, padding, dilation, groups, bias)
    (1, 2, 4, 5, 6, 3, (3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 1, True),
    (2, 4, 5, 4, 7, 6, (2, 3, 1), [2, 1, 2], [0, 1, 0], [1, 1, 3], 2, False),
    (1, 3, 3, 3, 3, 3, (1, 1, 1), [1, 1, 1], [0, 0, 0], [1, 1, 1], 3, True),
    (0, 2, 3, 3, 3, 2, (3, 3, 3), [1, 1, 1], [0, 0, 0], [1, 1, 1], 1, False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
@pytest.mark.parametrize("case", CONV3D_CASES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv3d(case, dtype, layout):
    n, c, d, h, w, oc, k, stride, padding, dilation, groups, has_bias = case
    x, weight = rand((n, c, d, h, w), dtype), rand((oc, c // groups, *k), dtype)
    bias = rand((oc,), dtype) if has_bias else None
    conv(x, weight, bias, stride, padding, dilation, groups, layout)


@pytest.mark.parametrize("dtype", [np.float16, np.int64, np.int32])
@pytest.mark.parametrize("spatial", [1, 2])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv_other_dtypes(dtype, spatial, layout):
    if spatial == 1 and layout == "channels_last":
        pytest.skip("channels-last is 2-D and up")
    shape = (2, 4, 9) if spatial == 1 else (2, 4, 6, 7)
    kshape = (6, 2, 3) if spatial == 1 else (6, 2, 3, 2)
    x, weight, bias = rand(shape, dtype), rand(kshape, dtype), rand((6,), dtype)
    conv(x, weight, bias, [2] * spatial, [1] * spatial, [1] * spatial, 2, layout)


# Depthwise 3×3 with stride 2 (MobileNet's downsampling layers): float32 with
# dilation 1 runs in bands of phase planes (depthwise_s2_f32.h; width 228:
# several bands, 601: one output row per band, 1300: too wide for its
# scratch, the row path), the rest the one-pass row kernel: odd and even
# widths, padding 0/1/2, dilation 1/2 and channel multipliers 1/2, so
# interior and edge columns both occur.
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [28, 29, 8, 228, 601, 1300])
@pytest.mark.parametrize("padding,dilation,mult", [(1, 1, 1), (0, 1, 1), (2, 2, 1), (1, 1, 2)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_depthwise_3x3_stride_2(dtype, width, padding, dilation, mult, layout):
    c = 24
    x = rand((2, c, 27, width), dtype)
    weight, bias = rand((c * mult, 1, 3, 3), dtype), rand((c * mult,), dtype)
    conv(x, weight, bias, [2, 2], [padding, padding], [dilation, dilation], c, layout)


# Depthwise 3×3 stride 1 (float32) takes the banded path (bands of rows in a
# zero-bordered copy, each band one long row): planes in one band and in
# several (57×58: two; 20×200: three; 3×680: one row per band, the widest
# the 8 KiB buffer takes; 4×700: too wide, the row path), padding 0/1/2,
# multipliers 1/2; float64 runs the row path on the same shapes.
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("height,width", [(7, 7), (14, 14), (5, 31), (9, 32), (40, 40), (1, 3),
                                          (57, 58), (20, 200), (3, 680), (4, 700)])
@pytest.mark.parametrize("padding,mult", [(1, 1), (0, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_depthwise_3x3_stride_1_small_planes(dtype, height, width, padding, mult, layout):
    if height + 2 * padding < 3 or width + 2 * padding < 3:
        pytest.skip("no output")
    c = 12
    x = rand((2, c, height, width), dtype)
    weight, bias = rand((c * mult, 1, 3, 3), dtype), rand((c * mult,), dtype)
    conv(x, weight, bias, [1, 1], [padding, padding], [1, 1], c, layout)


def test_conv_unsupported_dtype_names_it():
    x, weight = rand((1, 2, 4), np.float32).astype(np.bool_), rand((2, 2, 3), np.float32)
    out = np.empty((1, 2, 2), np.bool_)
    with pytest.raises(RuntimeError, match="aten::convolution.out"):
        _C.call_kernel("aten::convolution.out",
                       [x, weight.astype(np.bool_), None, [1], [0], [1], False, [0], 1, out])


# --- grid_sampler_2d bicubic ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sampler_bicubic(dtype, padding, align_corners):
    x = rand((2, 3, 5, 6), dtype)
    # Coordinates inside, on and beyond the border (padding matters there).
    grid = (RNG.uniform(-1.3, 1.3, size=(2, 4, 7, 2))).astype(dtype)
    grid[0, 0, 0] = [-1, -1]
    grid[0, 0, 1] = [1, 1]
    want = torch.ops.aten.grid_sampler_2d.default(torch.from_numpy(x), torch.from_numpy(grid), 2,
                                                  padding, align_corners)
    out = np.empty(tuple(want.shape), dtype)
    _C.call_kernel("aten::grid_sampler_2d.out", [x, grid, 2, padding, align_corners, out])
    atol, rtol = TOLERANCES[np.dtype(dtype)]
    np.testing.assert_allclose(out.astype(np.float64), want.numpy().astype(np.float64), atol=atol,
                               rtol=rtol)


# --- _embedding_bag ------------------------------------------------------------------

def embedding_bag(weight, indices, offsets, mode, psw=None, include_last=False, padding_idx=-1):
    args = (torch.from_numpy(weight), torch.from_numpy(indices), torch.from_numpy(offsets), False,
            mode, False, None if psw is None else torch.from_numpy(psw), include_last, padding_idx)
    want = torch.ops.aten._embedding_bag.default(*args)
    outs = [np.full(tuple(w.shape), 77, w.numpy().dtype) for w in want]
    _C.call_kernel("aten::_embedding_bag.out",
                   [weight, indices, offsets, False, mode, False, psw, include_last, padding_idx,
                    *outs], returns=[9, 10, 11, 12])
    return outs, [w.numpy() for w in want]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("include_last", [False, True])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_embedding_bag(dtype, mode, include_last, index_dtype):
    weight = rand((10, 3), dtype)
    indices = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0], index_dtype)
    # Bag 1 is empty; with include_last_offset the last offset ends the last bag.
    offsets = np.array([0, 3, 3, 5, 9] if include_last else [0, 3, 3, 5], index_dtype)
    got, want = embedding_bag(weight, indices, offsets, mode, include_last=include_last)
    atol, rtol = TOLERANCES[np.dtype(dtype)]
    np.testing.assert_allclose(got[0].astype(np.float64), want[0].astype(np.float64), atol=atol,
                               rtol=rtol)
    for g, w in zip(got[1:], want[1:], strict=True):  # offset2bag, bag_size, max_indices
        np.testing.assert_array_equal(g, w)


def test_embedding_bag_weighted_and_padding():
    weight = rand((6, 4), np.float32)
    indices = np.array([0, 5, 2, 2, 5], np.int64)
    offsets = np.array([0, 2], np.int64)
    psw = rand((5,), np.float32)
    got, want = embedding_bag(weight, indices, offsets, 0, psw=psw)
    np.testing.assert_allclose(got[0], want[0], atol=1e-6, rtol=1e-6)
    for mode in (0, 1, 2):
        got, want = embedding_bag(weight, indices, offsets, mode, padding_idx=5)
        np.testing.assert_allclose(got[0], want[0], atol=1e-6, rtol=1e-6)


def test_embedding_bag_errors_name_the_argument():
    weight = rand((4, 2), np.float32)
    outs = [np.empty((1, 2), np.float32), np.empty((0,), np.int64), np.empty((1,), np.int64),
            np.empty((1,), np.int64)]
    with pytest.raises(RuntimeError, match="indices: index 7 is out of bounds"):
        _C.call_kernel("aten::_embedding_bag.out",
                       [weight, np.array([7], np.int64), np.array([0], np.int64), False, 0, False,
                        None, False, -1, *outs], returns=[9, 10, 11, 12])
    with pytest.raises(RuntimeError, match="offsets"):
        _C.call_kernel("aten::_embedding_bag.out",
                       [weight, np.array([1], np.int64), np.array([1], np.int64), False, 0, False,
                        None, False, -1, *outs], returns=[9, 10, 11, 12])


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sampler_float16_matches_eager_bit_for_bit(mode, align_corners):
    # Eager computes float16 grid sampling in float16, rounding every step.
    x = rand((2, 3, 5, 5), np.float16)
    grid = RNG.uniform(-1.1, 1.1, size=(2, 5, 5, 2)).astype(np.float16)
    want = torch.ops.aten.grid_sampler_2d.default(torch.from_numpy(x), torch.from_numpy(grid),
                                                  mode, 0, align_corners)
    out = np.empty(tuple(want.shape), np.float16)
    _C.call_kernel("aten::grid_sampler_2d.out", [x, grid, mode, 0, align_corners, out])
    np.testing.assert_array_equal(out, want.numpy())


# --- transposed convolution (transposed=True) ------------------------------------------
# Tensors cross as torch tensors (DLPack), so bfloat16 runs too. Inputs are
# standard normal; |got - want| <= tol * max|want| per dtype: float32 and
# float64 sum in another order than eager (GEMM + scatter), float16 and
# bfloat16 round Ember's float sum once while eager rounds more often, so a
# few units in the last place of the largest outputs.
TRANSPOSED_TOL = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 4e-3,
                  torch.bfloat16: 2e-2}
TRANSPOSED_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _channels_last(t: torch.Tensor) -> torch.Tensor:
    perm = (0, *range(2, t.dim()), 1)
    return t.permute(perm).contiguous().permute(tuple(np.argsort(perm)))


def conv_transposed(x, weight, bias, stride, padding, dilation, output_padding, groups,
                    layout="contiguous"):
    """Runs Ember's kernel and eager on the same tensors; returns (got, want)."""
    want = torch.ops.aten.convolution.default(x, weight, bias, stride, padding, dilation, True,
                                              output_padding, groups)
    out = torch.full(tuple(want.shape), 77, dtype=x.dtype)
    if layout == "channels_last":
        x, weight, out = _channels_last(x), _channels_last(weight), _channels_last(out)
    _C.call_kernel("aten::convolution.out",
                   [x, weight, bias, stride, padding, dilation, True, output_padding, groups,
                    out])
    return out, want


def assert_close_to_magnitude(got: torch.Tensor, want: torch.Tensor, tol: float) -> float:
    """|got - want| <= tol * max(1, max|want|); returns the error relative to that scale."""
    assert got.shape == want.shape
    if want.numel() == 0:
        return 0.0
    scale = max(1.0, want.double().abs().max().item())
    err = (got.double() - want.double()).abs().max().item() / scale
    assert err <= tol, f"max error {err:.3g} of max |out| {scale:.3g} exceeds {tol:g}"
    return err


TRANSPOSED_CASES = [
    # (N, C_in, spatial, C_out, kernel, stride, padding, dilation, output_padding, groups, bias)
    # 1-D
    (1, 3, (9,), 4, (3,), [1], [0], [1], [0], 1, True),
    (2, 4, (7,), 6, (4,), [3], [1], [1], [2], 2, False),
    (1, 6, (8,), 6, (3,), [2], [1], [2], [1], 6, True),  # depthwise-like, groups = C_in
    # 2-D
    (1, 3, (5, 6), 4, (3, 3), [1, 1], [0, 0], [1, 1], [0, 0], 1, True),
    (2, 4, (4, 5), 6, (3, 2), [2, 3], [1, 0], [1, 2], [1, 2], 2, False),
    (1, 8, (6, 6), 8, (3, 3), [2, 2], [1, 1], [1, 1], [1, 1], 8, True),  # groups = C_in
    (1, 4, (5, 5), 8, (4, 4), [2, 2], [1, 1], [1, 1], [0, 0], 4, True),  # 2 out per group
    (1, 5, (7, 4), 3, (2, 3), [1, 2], [0, 2], [3, 1], [2, 1], 1, True),  # op < dilation
    (3, 16, (8, 9), 12, (3, 3), [2, 2], [1, 1], [1, 1], [1, 0], 1, True),
    (1, 2, (3, 3), 3, (7, 11), [1, 1], [2, 3], [1, 1], [0, 0], 1, False),  # big kernel
    (0, 3, (4, 4), 2, (3, 3), [2, 2], [0, 0], [1, 1], [1, 1], 1, True),  # empty batch
    # 3-D
    (1, 2, (3, 4, 3), 4, (2, 3, 2), [2, 1, 2], [0, 1, 1], [1, 1, 2], [1, 0, 1], 2, True),
    (2, 3, (2, 3, 3), 3, (3, 1, 2), [1, 2, 2], [1, 0, 0], [1, 1, 1], [0, 1, 1], 3, False),
]


@pytest.mark.parametrize("dtype", TRANSPOSED_DTYPES, ids=str)
@pytest.mark.parametrize("case", TRANSPOSED_CASES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv_transposed_matches_eager(case, dtype, layout):
    n, c, spatial, oc, k, stride, padding, dilation, out_pad, groups, has_bias = case
    gen = torch.Generator().manual_seed(11)
    x = torch.randn((n, c, *spatial), generator=gen).to(dtype)
    weight = torch.randn((c, oc // groups, *k), generator=gen).to(dtype)
    bias = torch.randn((oc,), generator=gen).to(dtype) if has_bias else None
    got, want = conv_transposed(x, weight, bias, stride, padding, dilation, out_pad, groups,
                                layout)
    assert_close_to_magnitude(got, want, TRANSPOSED_TOL[dtype])


def test_conv_transposed_one_value_lists_and_int64():
    # One value for every spatial dim, as eager expands it; int64 is exact.
    x = torch.randint(-5, 6, (2, 4, 3, 5))
    weight = torch.randint(-5, 6, (4, 3, 2, 3))
    bias = torch.randint(-5, 6, (6,))
    got, want = conv_transposed(x, weight, bias, [2], [1], [1], [1], 2)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_conv_transposed_large_float32_crosses_gemm_blocks():
    # Several GEMM row/column blocks and the thread pool.
    gen = torch.Generator().manual_seed(3)
    x = torch.randn((2, 64, 20, 20), generator=gen)
    weight = torch.randn((64, 32, 4, 4), generator=gen) * 0.1
    bias = torch.randn((32,), generator=gen)
    for layout in ("contiguous", "channels_last"):
        got, want = conv_transposed(x, weight, bias, [2, 2], [1, 1], [1, 1], [0, 0], 1, layout)
        assert_close_to_magnitude(got, want, TRANSPOSED_TOL[torch.float32])


@pytest.mark.parametrize(
    ("stride", "padding", "dilation", "output_padding", "groups", "match"),
    [
        ([2, 2], [0, 0], [1, 1], [2, 1], 1,
         r"output_padding: must be smaller than either stride or dilation, but spatial dim 0 "
         r"has output_padding 2, stride 2 and dilation 1"),
        ([1, 1], [0, 0], [1, 1], [-1, 0], 1, r"output_padding: \[-1, 0\] has a value below 0"),
        ([0, 1], [0, 0], [1, 1], [0, 0], 1, r"stride: \[0, 1\] has a value below 1"),
        ([1, 1], [0, 0], [1, 1], [0, 0], 3, r"groups: 3 does not divide the input channels"),
        ([1, 1], [4, 0], [1, 1], [0, 0], 1, r"spatial dim 0 of size 5 gives output size -1"),
    ],
)
def test_conv_transposed_bad_configuration_names_argument(stride, padding, dilation,
                                                          output_padding, groups, match):
    x, weight = torch.randn(1, 4, 5, 5), torch.randn(4, 3, 3, 3)
    out = torch.empty(1, 3, 7, 7)
    with pytest.raises(RuntimeError, match=match):
        _C.call_kernel("aten::convolution.out",
                       [x, weight, None, stride, padding, dilation, True, output_padding, groups,
                        out])
