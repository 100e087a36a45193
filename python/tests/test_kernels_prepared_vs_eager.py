"""Kernels with a prepare step (the kernel contract's load-time phase), driven
through the lifecycle a loaded method gives them: ``call_kernel(...,
constants=[...], runs=N)`` runs the kinds check and prepare once, with the
listed tensors as program constants, then N runs on that one prepared state.

Convolution packs a constant float32 weight into the GEMM's A panels and
mm/addmm a constant float32 mat2 into its B panels. The packed A panels hold the
very values the per-call packing would produce, read in the same order, so a
prepared convolution gives the same bits as the unprepared one (except small
planes, whose Wᵀ is packed as B panels: see ROWS_CASES). Packed B panels
are summed in deeper blocks (256 against 128: fewer microkernel calls), so a
prepared mm/addmm/bmm gives the unprepared bits when k <= 128 (one block either
way) and agrees to rounding past that; every run on one prepared state gives
the same bits, and all agree with eager within float32's summation tolerance,
relative to the output's magnitude. Non-constant weights, other dtypes and shapes that take another
path (depthwise, GEMV, transposed) prepare nothing and still match.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

RNG = np.random.default_rng(11)


def same_as_unprepared(packed: np.ndarray, plain: np.ndarray, k: int) -> None:
    """B packed at prepare against B packed per call: the same bits within
    one depth block (k <= 128), rounding apart past it."""
    if k <= 128:
        np.testing.assert_array_equal(packed, plain)
    else:
        assert rel_err(packed, plain) < 1e-6


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    scale = max(float(np.abs(want).max()), 1e-30) if want.size else 1.0
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max() / scale) \
        if want.size else 0.0


CONV_CASES = [
    # (N, C, H, W, OC, KH, KW, stride, padding, dilation, groups, bias)
    (1, 16, 9, 11, 24, 3, 3, [1, 1], [1, 1], [1, 1], 1, True),   # im2col GEMM
    (2, 32, 7, 7, 80, 1, 1, [1, 1], [0, 0], [1, 1], 1, False),   # pointwise GEMM, m > kMC
    (1, 12, 8, 8, 18, 3, 3, [2, 2], [1, 0], [1, 2], 3, True),    # grouped
    (1, 8, 6, 6, 8, 3, 3, [1, 1], [1, 1], [1, 1], 8, True),      # depthwise: no GEMM
    (1, 150, 5, 5, 7, 3, 3, [1, 1], [1, 1], [1, 1], 1, True),    # k = 1350 > kKC
]

# Small planes whose positions make better GEMM rows than columns on the AVX2
# and AVX-512 tiles, with k deep enough to pay for the transpose
# (op_convolution.cpp, positions_as_rows): prepare packs Wᵀ
# as B panels, summed in 256-deep blocks, so they agree with the unprepared
# call to rounding past k = 128 (the portable tile keeps the other way).
ROWS_CASES = [
    (1, 32, 7, 7, 64, 3, 3, [1, 1], [1, 1], [1, 1], 1, True),    # k = 288
    (2, 320, 7, 7, 96, 1, 1, [1, 1], [0, 0], [1, 1], 1, False),  # pointwise
    (1, 96, 14, 14, 64, 3, 3, [2, 2], [1, 1], [1, 1], 2, True),  # stride 2, grouped
    (1, 300, 6, 6, 64, 3, 3, [1, 1], [1, 1], [1, 1], 1, True),   # k = 2700: 11 depth blocks
    (1, 520, 5, 7, 70, 1, 1, [1, 1], [0, 0], [1, 1], 1, True),   # 35 positions, 70 channels
]


def conv_call(x, w, b, stride, padding, dilation, groups, constants, runs):
    want = torch.ops.aten.convolution.default(
        torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b),
        stride, padding, dilation, False, [0, 0], groups).numpy()
    out = np.full(want.shape, np.nan, x.dtype)
    used = _C.call_kernel("aten::convolution.out",
                          [x, w, b, stride, padding, dilation, False, [0, 0], groups, out],
                          constants=constants, runs=runs)
    return out, want, used


@pytest.mark.parametrize("case", CONV_CASES + ROWS_CASES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_convolution_packs_a_constant_weight(case, layout):
    n, c, h, w_, oc, kh, kw, stride, padding, dilation, groups, has_bias = case
    x = RNG.standard_normal((n, c, h, w_)).astype(np.float32)
    w = RNG.standard_normal((oc, c // groups, kh, kw)).astype(np.float32)
    b = RNG.standard_normal((oc,)).astype(np.float32) if has_bias else None
    if layout == "channels_last":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        w = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    plain, want, used_plain = conv_call(x, w, b, stride, padding, dilation, groups, [], 1)
    packed, _, used = conv_call(x, w, b, stride, padding, dilation, groups, [1], 3)
    depthwise = groups == c and oc // groups <= 4
    assert used_plain == 0
    if depthwise:
        assert used == 0, "a depthwise convolution takes no GEMM: nothing to pack"
    else:
        # One float per weight element at least (panels are padded to the tile).
        assert used >= w.size * 4, used
    if case in ROWS_CASES:
        same_as_unprepared(packed, plain, w[0].size)
    else:
        np.testing.assert_array_equal(packed, plain)
    assert rel_err(packed, want) < 1e-5


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_convolution_winograd_through_call_kernel(layout):
    # Large enough for Winograd F(4x4, 3x3): call_kernel hands the kernel the
    # scratch its prepare reserved, as a loaded method does. Its bits differ
    # from im2col's; both are within conv_winograd.h's bound of float64.
    x = RNG.standard_normal((2, 24, 20, 18)).astype(np.float32)
    w = RNG.standard_normal((32, 24, 3, 3)).astype(np.float32)
    b = RNG.standard_normal((32,)).astype(np.float32)
    if layout == "channels_last":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    plain, _, _ = conv_call(x, w, b, [1, 1], [1, 1], [1, 1], 1, [], 1)
    packed, _, used = conv_call(x, w, b, [1, 1], [1, 1], [1, 1], 1, [1], 3)
    want = torch.ops.aten.convolution.default(
        torch.from_numpy(x).double(), torch.from_numpy(w).double(), torch.from_numpy(b).double(),
        [1, 1], [1, 1], [1, 1], False, [0, 0], 1).numpy()
    assert used >= 36 * 32 * 24 * 4, "the transformed weight: 36 matrices of 32 x 24"
    assert rel_err(packed, want) <= 3e-5
    assert rel_err(plain, want) <= 2e-6
    assert not np.array_equal(packed, plain)


def test_convolution_float64_and_transposed_prepare_nothing():
    x = RNG.standard_normal((1, 4, 6, 6))
    w = RNG.standard_normal((6, 4, 3, 3))
    out = np.empty((1, 6, 4, 4))
    assert _C.call_kernel("aten::convolution.out",
                          [x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, out],
                          constants=[1], runs=2) == 0
    want = torch.ops.aten.convolution.default(torch.from_numpy(x), torch.from_numpy(w), None,
                                              [1, 1], [0, 0], [1, 1], False, [0, 0], 1).numpy()
    assert rel_err(out, want) < 1e-12
    xt = RNG.standard_normal((1, 4, 5, 5)).astype(np.float32)
    wt = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    outt = np.empty((1, 3, 7, 7), np.float32)
    assert _C.call_kernel("aten::convolution.out",
                          [xt, wt, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1, outt],
                          constants=[1], runs=2) == 0


def test_convolution_prepare_refuses_a_bad_constant_configuration():
    x = np.zeros((1, 4, 5, 5), np.float32)
    w = np.zeros((6, 3, 3, 3), np.float32)  # 3 input channels per group; the input has 4
    out = np.empty((1, 6, 3, 3), np.float32)
    with pytest.raises(_C.EmberError, match="prepare.*weight: shape \\[6, 3, 3, 3\\] expects 3 "
                                            "input channels per group"):
        _C.call_kernel("aten::convolution.out",
                       [x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, out], constants=[1])


MM_SHAPES = [(5, 7, 9), (64, 200, 130), (130, 96, 97), (3, 40, 50), (17, 1, 33), (0, 8, 8)]


@pytest.mark.parametrize("m,k,n", MM_SHAPES)
@pytest.mark.parametrize("transposed_b", [False, True])
def test_mm_packs_a_constant_mat2(m, k, n, transposed_b):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    if transposed_b:  # A linear layer's weight, seen as its transpose.
        b = np.ascontiguousarray(b.T).T
    want = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    plain = np.full((m, n), np.nan, np.float32)
    packed = np.full((m, n), np.nan, np.float32)
    assert _C.call_kernel("aten::mm.out", [a, b, plain]) == 0
    used = _C.call_kernel("aten::mm.out", [a, b, packed], constants=[1], runs=3)
    # Products of at most 4 rows or columns run the small-m path on mat2
    # itself, so prepare packs nothing for them.
    small = m <= 4 or n <= 4
    assert used == 0 if small else used >= (b.size * 4 if b.size else 0)
    same_as_unprepared(packed, plain, k)
    assert rel_err(packed, want) < 1e-5


@pytest.mark.parametrize("b,m,k,n", [(3, 20, 33, 50), (2, 130, 96, 97), (4, 3, 16, 40), (1, 17, 1, 33)])
@pytest.mark.parametrize("transposed_b", [False, True])
def test_bmm_packs_a_constant_mat2_per_batch(b, m, k, n, transposed_b):
    """A constant bmm operand (a per-head weight) is packed once per batch; the
    packed runs give the unpacked result (same_as_unprepared), the same bits
    run after run."""
    x = RNG.standard_normal((b, m, k)).astype(np.float32)
    w = RNG.standard_normal((b, k, n)).astype(np.float32)
    if transposed_b:
        w = np.ascontiguousarray(w.transpose(0, 2, 1)).transpose(0, 2, 1)
    want = (torch.from_numpy(x) @ torch.from_numpy(w)).numpy()
    plain = np.full((b, m, n), np.nan, np.float32)
    packed = np.full((b, m, n), np.nan, np.float32)
    assert _C.call_kernel("aten::bmm.out", [x, w, plain]) == 0
    used = _C.call_kernel("aten::bmm.out", [x, w, packed], constants=[1], runs=3)
    small = m <= 4 or n <= 4
    assert used == 0 if small else used >= w.size * 4
    same_as_unprepared(packed, plain, k)
    assert rel_err(packed, want) < 1e-5


# m = 3 takes the small-m path, k = 300 crosses the GEMM's k-blocks; with beta =
# alpha = 1 the bias is the GEMM's column epilogue, as a [n] or a [1, n] tensor.
@pytest.mark.parametrize("m,k,n", [(6, 64, 48), (128, 256, 100), (3, 300, 40), (70, 300, 33)])
@pytest.mark.parametrize("beta,alpha", [(1.0, 1.0), (0.5, 2.0), (0.0, 1.0)])
@pytest.mark.parametrize("bias_rows", [0, 1])
def test_addmm_packs_a_constant_weight(m, k, n, beta, alpha, bias_rows):
    x = RNG.standard_normal((m, k)).astype(np.float32)
    weight = RNG.standard_normal((n, k)).astype(np.float32)
    mat2 = weight.T  # What a linear layer's addmm receives.
    bias = RNG.standard_normal((n,) if bias_rows == 0 else (1, n)).astype(np.float32)
    want = torch.addmm(torch.from_numpy(bias), torch.from_numpy(x), torch.from_numpy(mat2),
                       beta=beta, alpha=alpha).numpy()
    plain = np.empty((m, n), np.float32)
    packed = np.empty((m, n), np.float32)
    _C.call_kernel("aten::addmm.out", [bias, x, mat2, beta, alpha, plain])
    used = _C.call_kernel("aten::addmm.out", [bias, x, mat2, beta, alpha, packed], constants=[2],
                          runs=2)
    assert used == 0 if m <= 4 else used >= mat2.size * 4  # a GEMV streams the weight
    same_as_unprepared(packed, plain, k)
    assert rel_err(packed, want) < 1e-5


def test_a_non_constant_or_other_dtype_mat2_is_not_packed():
    a = RNG.standard_normal((20, 30))
    b = RNG.standard_normal((30, 40))
    out = np.empty((20, 40))
    assert _C.call_kernel("aten::mm.out", [a, b, out], constants=[1]) == 0  # float64
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    out32 = np.empty((20, 40), np.float32)
    assert _C.call_kernel("aten::mm.out", [a32, b32, out32], runs=2) == 0  # not constant
    assert rel_err(out32, a32.astype(np.float64) @ b32.astype(np.float64)) < 1e-5


def test_prepare_needs_room_in_the_method_allocator():
    a = RNG.standard_normal((64, 128)).astype(np.float32)
    b = RNG.standard_normal((128, 128)).astype(np.float32)
    out = np.empty((64, 128), np.float32)
    with pytest.raises(_C.EmberError, match="prepare needs .* more bytes"):
        _C.call_kernel("aten::mm.out", [a, b, out], constants=[1], prepare_bytes=1024)
