"""Ember's linear-algebra kernels (Cholesky, LU, solves, inverse, determinants, QR, eigh,
SVD, pinv)
against eager, and the linalg error checks export wraps in ``with_effects``.

Kernel calls through ``call_kernel`` in float32 and float64 over square and
rectangular sizes, batches (broadcast ones too), empty batches and
transposed (non-contiguous) inputs; then the ops through the whole flow
(export -> to_edge -> to_executorch -> runtime).

Tolerances: Ember computes in double. References are eager's float64 results
on the same inputs (float32 inputs widened), so a float32 result differs from
them by its own rounding times the problem's conditioning: the test matrices
are well conditioned (random + n·I, or X Xᵀ + n·I: condition numbers below
~30), and results must agree within ``TOL[dtype]`` × max|reference| (per
output), with float64 at 1e-11 (rounding of O(n³) operations). Pivots and
info are compared exactly (random matrices have no ties).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

aten = torch.ops.aten
DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: 4e-6, torch.float64: 1e-11}
I32 = torch.int32


def rand(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def general(shape, dtype, seed=0):
    """Well-conditioned square matrices: random + n·I."""
    n = shape[-1]
    a = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (a + n * torch.eye(n, dtype=torch.float64)).to(dtype)


def spd(shape, dtype, seed=0):
    n = shape[-1]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (x @ x.mT + n * torch.eye(n, dtype=torch.float64)).to(dtype)


def transposed(x):
    """The same values in a non-contiguous (transposed) layout."""
    return x.mT.contiguous().mT if x.dim() >= 2 else x


def call(name, args, outs):
    """Runs kernel `name` on `args` + `outs` (empty tensors resized by the kernel)."""
    outs = list(outs)
    n = len(args)
    if len(outs) == 1:  # a single out is the return slot
        _C.call_kernel(name, list(args) + outs)
    else:
        _C.call_kernel(name, list(args) + outs, returns=list(range(n, n + len(outs))))
    return outs


def close(got, want, dtype, what=""):
    want = want.to(torch.float64)
    scale = max(want.abs().max().item(), 1.0) if want.numel() else 1.0
    assert got.shape == want.shape, (what, got.shape, want.shape)
    torch.testing.assert_close(got.to(torch.float64), want, rtol=0, atol=TOL[dtype] * scale,
                               equal_nan=True, msg=what)


def empty(dtype, *shape):
    return torch.empty(shape, dtype=dtype)


SQUARE = [(1, 1), (3, 3), (5, 5), (2, 3, 4, 4), (0, 3, 3), (2, 0, 0)]


# --- Cholesky --------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, shape, upper):
    a = spd(shape, dtype)
    want, want_info = aten.linalg_cholesky_ex(a.double(), upper=upper)
    for layout, x in (("contiguous", a), ("transposed", transposed(a))):
        L, info = call("aten::linalg_cholesky_ex.L", [x, upper, False],
                       [empty(dtype, *shape), empty(I32, *shape[:-2])])
        close(L, want, dtype, layout)
        assert torch.equal(info, want_info)
        (c,) = call("aten::cholesky.out", [x, upper], [empty(dtype, *shape)])
        close(c, want, dtype, layout)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shapes", [((3, 3), (3, 2)), ((2, 4, 4), (4, 3)), ((4, 4), (2, 1, 4, 1)),
                                    ((0, 3, 3), (3, 2))])
def test_cholesky_solve_and_inverse(dtype, upper, shapes):
    a_shape, b_shape = shapes
    f = aten.linalg_cholesky_ex(spd(a_shape, torch.float64), upper=upper)[0].to(dtype)
    b = rand(b_shape, dtype, seed=1)
    want = aten.cholesky_solve(b.double(), f.double(), upper)
    (x,) = call("aten::cholesky_solve.out", [transposed(b), transposed(f), upper],
                [empty(dtype, *want.shape)])
    close(x, want, dtype)
    want = aten.cholesky_inverse(f.double(), upper)
    (x,) = call("aten::cholesky_inverse.out", [transposed(f), upper], [empty(dtype, *a_shape)])
    close(x, want, dtype)


def test_cholesky_not_positive_definite():
    a = spd((3, 4, 4), torch.float64)
    a[1, 2, 2] = -100.0
    _, info = call("aten::linalg_cholesky_ex.L", [a, False, False],
                   [empty(torch.float64, 3, 4, 4), empty(I32, 3)])
    assert info.tolist() == aten.linalg_cholesky_ex(a)[1].tolist() == [0, 3, 0]
    with pytest.raises(RuntimeError, match="leading minor of order 3 is not positive-definite"):
        call("aten::cholesky.out", [a, False], [empty(torch.float64, 3, 4, 4)])
    with pytest.raises(RuntimeError, match="leading minor of order 3"):
        call("aten::linalg_cholesky_ex.L", [a, False, True],
             [empty(torch.float64, 3, 4, 4), empty(I32, 3)])
    with pytest.raises(RuntimeError, match="square matrices, got shape \\[3, 4\\]"):
        call("aten::cholesky.out", [torch.zeros(3, 4), False], [empty(torch.float32, 3, 4)])
    with pytest.raises(RuntimeError, match="self: unsupported dtype float16"):
        _C.call_kernel("aten::cholesky.out", [torch.zeros(2, 2, dtype=torch.float16), False,
                                              empty(torch.float16, 2, 2)], check_dtypes=False)


# --- LU --------------------------------------------------------------------

LU_SHAPES = [(1, 1), (4, 4), (3, 5), (5, 3), (2, 3, 4, 4), (2, 4, 3), (0, 3, 3), (2, 0, 3)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", LU_SHAPES)
def test_lu_factor_lu_and_unpack(dtype, shape):
    a = rand(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    want_lu, want_piv, want_info = aten.linalg_lu_factor_ex(a.double())
    lu, piv, info = call("aten::linalg_lu_factor_ex.out", [transposed(a), True, False],
                         [empty(dtype, *shape), empty(I32, *shape[:-2], k),
                          empty(I32, *shape[:-2])])
    close(lu, want_lu, dtype)
    assert torch.equal(piv, want_piv) and torch.equal(info, want_info)
    want = aten.linalg_lu(a.double())
    got = call("aten::linalg_lu.out", [transposed(a), True],
               [empty(dtype, *w.shape) for w in want])
    for g, w, name in zip(got, want, "PLU", strict=True):
        close(g, w, dtype, name)
    for unpack_data in (True, False):
        for unpack_pivots in (True, False):
            want = aten.lu_unpack(want_lu, want_piv, unpack_data, unpack_pivots)
            got = call("aten::lu_unpack.out", [want_lu.to(dtype), want_piv, unpack_data,
                                               unpack_pivots],
                       [empty(dtype, *w.shape) for w in want])
            for g, w, name in zip(got, want, "PLU", strict=True):
                close(g, w, dtype, f"{name} data={unpack_data} pivots={unpack_pivots}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("shapes", [((4, 4), (4, 2)), ((2, 3, 3), (3, 3)), ((3, 3), (2, 1, 3, 3)),
                                    ((0, 3, 3), (3, 3))])
def test_lu_solve(dtype, left, adjoint, shapes):
    a_shape, b_shape = shapes
    a = general(a_shape, torch.float64)
    lu, piv = aten.linalg_lu_factor_ex(a)[:2]
    b = rand(b_shape, dtype, seed=2)
    if not left:
        b = b.mT
    want = aten.linalg_lu_solve(lu, piv, b.double(), left=left, adjoint=adjoint)
    (x,) = call("aten::linalg_lu_solve.out", [transposed(lu.to(dtype)), piv, transposed(b), left,
                                             adjoint], [empty(dtype, *want.shape)])
    close(x, want, dtype)


def test_lu_singular_info_and_errors():
    a = torch.tensor([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]]], dtype=torch.float64)
    _, piv, info = call("aten::linalg_lu_factor_ex.out", [a, True, False],
                        [empty(torch.float64, 2, 2, 2), empty(I32, 2, 2), empty(I32, 2)])
    want = aten.linalg_lu_factor_ex(a)
    assert torch.equal(piv, want[1]) and info.tolist() == want[2].tolist() == [2, 1]
    with pytest.raises(RuntimeError, match="U\\[2,2\\] is zero"):
        call("aten::linalg_lu_factor_ex.out", [a, True, True],
             [empty(torch.float64, 2, 2, 2), empty(I32, 2, 2), empty(I32, 2)])
    with pytest.raises(RuntimeError, match="pivot=False"):
        call("aten::linalg_lu_factor_ex.out", [a, False, False],
             [empty(torch.float64, 2, 2, 2), empty(I32, 2, 2), empty(I32, 2)])
    bad = torch.tensor([1, 3], dtype=I32)
    with pytest.raises(RuntimeError,
                       match="pivots: pivot 3 \\(entry 1\\) is out of range \\[1, 2\\]"):
        call("aten::linalg_lu_solve.out", [a[0], bad, torch.ones(2, 1, dtype=torch.float64),
                                           True, False], [empty(torch.float64, 2, 1)])
    with pytest.raises(RuntimeError, match="LU_pivots: pivot 3"):
        call("aten::lu_unpack.out", [a[0], bad, True, True],
             [empty(torch.float64, 2, 2) for _ in range(3)])
    with pytest.raises(RuntimeError, match="B \\[3, 1\\] must have 2 rows"):
        call("aten::linalg_lu_solve.out", [a[0], bad, torch.ones(3, 1, dtype=torch.float64),
                                           True, False], [empty(torch.float64, 3, 1)])


# --- solve, inv, det, slogdet ----------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("shapes", [((4, 4), (4, 3)), ((4, 4), (3, 4)), ((2, 1, 3, 3), (4, 3, 3)),
                                    ((3, 3), (3,)), ((2, 3, 3), (2, 3)), ((0, 2, 2), (2, 2))])
def test_solve_ex(dtype, left, shapes):
    a_shape, b_shape = shapes
    a, b = general(a_shape, dtype), rand(b_shape, dtype, seed=3)
    try:
        want = aten._linalg_solve_ex(a.double(), b.double(), left=left)
    except RuntimeError:
        pytest.skip("eager refuses these shapes")
    got = call("aten::_linalg_solve_ex.result", [transposed(a), transposed(b), left, False],
               [empty(w.dtype if w.dtype == I32 else dtype, *w.shape) for w in want])
    close(got[0], want[0], dtype, "result")
    close(got[1], want[1], dtype, "LU")
    assert torch.equal(got[2], want[2]) and torch.equal(got[3], want[3])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
def test_inv_det_slogdet(dtype, shape):
    a = general(shape, dtype) * 0.5
    a64 = a.double()
    inv, info = call("aten::linalg_inv_ex.inverse", [transposed(a), False],
                     [empty(dtype, *shape), empty(I32, *shape[:-2])])
    close(inv, aten.linalg_inv_ex(a64)[0], dtype, "inv")
    assert not info.any()
    want = aten._linalg_det(a64)
    got = call("aten::_linalg_det.result", [transposed(a)],
               [empty(dtype, *shape[:-2]), empty(dtype, *shape), empty(I32, *shape[:-1])])
    close(got[0], want[0], dtype, "det")
    close(got[1], want[1], dtype, "LU")
    assert torch.equal(got[2], want[2])
    want = aten._linalg_slogdet(a64)
    got = call("aten::_linalg_slogdet.sign", [transposed(a)],
               [empty(dtype, *shape[:-2]), empty(dtype, *shape[:-2]), empty(dtype, *shape),
                empty(I32, *shape[:-1])])
    for g, w, name in zip(got, want, ("sign", "logabsdet", "LU", "pivots"), strict=True):
        if w.dtype == I32:
            assert torch.equal(g, w), name
        else:
            close(g, w, dtype, name)


def test_singular_inverse_det_slogdet():
    a = torch.tensor([[[1.0, 2.0], [2.0, 4.0]], [[-2.0, 1.0], [1.0, 3.0]]])
    inv, info = call("aten::linalg_inv_ex.inverse", [a, False],
                     [empty(torch.float32, 2, 2, 2), empty(I32, 2)])
    assert info.tolist() == aten.linalg_inv_ex(a)[1].tolist() == [2, 0]
    assert not torch.isfinite(inv[0]).all()
    with pytest.raises(RuntimeError, match="singular"):
        call("aten::linalg_inv_ex.inverse", [a, True],
             [empty(torch.float32, 2, 2, 2), empty(I32, 2)])
    sign, logabs, _, _ = call("aten::_linalg_slogdet.sign", [a],
                              [empty(torch.float32, 2), empty(torch.float32, 2),
                               empty(torch.float32, 2, 2, 2), empty(I32, 2, 2)])
    assert sign.tolist() == [0.0, -1.0] and logabs[0].item() == float("-inf")
    (det,) = call("aten::_linalg_det.result", [a],
                  [empty(torch.float32, 2), empty(torch.float32, 2, 2, 2), empty(I32, 2, 2)])[:1]
    assert det.tolist() == [0.0, -7.0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(dtype, upper, left, unit):
    t = general((2, 4, 4), dtype)  # the other triangle is garbage: it must not be read
    b = rand((3, 1, 4, 4) if left else (3, 1, 2, 4), dtype, seed=4)
    want = aten.linalg_solve_triangular(t.double(), b.double(), upper=upper, left=left,
                                        unitriangular=unit)
    (x,) = call("aten::linalg_solve_triangular.out", [transposed(t), transposed(b), upper, left,
                                                     unit], [empty(dtype, *want.shape)])
    close(x, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
def test_triangular_solve(dtype, upper, transpose):
    a, b = general((4, 4), dtype), rand((2, 4, 3), dtype, seed=5)
    want = aten.triangular_solve(b.double(), a.double(), upper, transpose, False)
    got = call("aten::triangular_solve.X", [transposed(b), transposed(a), upper, transpose, False],
               [empty(dtype, *w.shape) for w in want])
    close(got[0], want[0], dtype, "solution")
    close(got[1], want[1], dtype, "cloned_coefficient")


# --- QR --------------------------------------------------------------------

QR_SHAPES = [(1, 1), (4, 4), (5, 3), (3, 5), (2, 3, 4, 2), (0, 3, 3), (2, 0, 3), (3, 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", QR_SHAPES)
def test_geqrf_and_qr(dtype, shape):
    """LAPACK's reflector convention: a, tau, Q and R match eager, signs included."""
    a = rand(shape, dtype)
    want = aten.geqrf(a.double())
    got = call("aten::geqrf.a", [transposed(a)], [empty(dtype, *w.shape) for w in want])
    close(got[0], want[0], dtype, "a")
    close(got[1], want[1], dtype, "tau")
    for mode in ("reduced", "complete", "r"):
        want = aten.linalg_qr(a.double(), mode)
        got = call("aten::linalg_qr.out", [transposed(a), mode],
                   [empty(dtype, *w.shape) for w in want])
        close(got[0], want[0], dtype, f"Q {mode}")
        close(got[1], want[1], dtype, f"R {mode}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((5, 3), (3,)), ((4, 4), (2,)), ((2, 5, 2), (2, 2)),
                                    ((0, 3, 2), (0, 2))])
def test_householder_product(dtype, shapes):
    a_shape, t_shape = shapes
    v, tau = rand(a_shape, dtype), rand(t_shape, dtype, seed=1)
    want = aten.linalg_householder_product(v.double(), tau.double())
    (q,) = call("aten::linalg_householder_product.out", [transposed(v), tau],
                [empty(dtype, *want.shape)])
    close(q, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr(dtype, left, transpose):
    v, tau = aten.geqrf(rand((2, 5, 3), torch.float64))
    c = rand((2, 5, 4) if left else (2, 4, 5), dtype, seed=2)
    want = aten.ormqr(v, tau, c.double(), left, transpose)
    (x,) = call("aten::ormqr.out", [transposed(v.to(dtype)), tau.to(dtype), transposed(c), left,
                                    transpose], [empty(dtype, *want.shape)])
    close(x, want, dtype)


def test_qr_errors():
    with pytest.raises(RuntimeError, match="unrecognized mode 'full'"):
        call("aten::linalg_qr.out", [torch.zeros(2, 2), "full"], [empty(torch.float32, 2, 2)] * 2)
    with pytest.raises(RuntimeError, match="at least as many rows as columns"):
        call("aten::linalg_householder_product.out", [torch.zeros(2, 3), torch.zeros(2)],
             [empty(torch.float32, 2, 3)])


# --- eigh, SVD, pinv ---------------------------------------------------------
# Vectors are defined up to sign: each is flipped to eager's before comparing
# (random matrices have well-separated values), and checked orthonormal; the
# values and reconstructions within TOL of the matrix's norm.


def aligned(got, want):
    """got's columns flipped to the sign of want's."""
    signs = torch.where((got.double() * want.double()).sum(-2, keepdim=True) < 0, -1.0, 1.0)
    return got.double() * signs, signs


def orthonormal(q, dtype):
    eye = torch.eye(q.shape[-1], dtype=torch.float64)
    close(q.double().mT @ q.double(), eye.expand(q.shape[:-2] + eye.shape), dtype, "QᵀQ")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 5, 5), (0, 3, 3), (6, 6)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, shape, uplo):
    a = rand(shape, dtype)  # the triangle UPLO does not name is garbage: not read
    sym = a.double().tril() + a.double().tril(-1).mT if uplo == "L" else \
        a.double().triu() + a.double().triu(1).mT
    w_want, v_want = aten._linalg_eigh(sym, uplo)
    w, v = call("aten::_linalg_eigh.eigenvalues", [transposed(a), uplo, True],
                [empty(dtype, *w_want.shape), empty(dtype, *shape)])
    close(w, w_want, dtype, "eigenvalues")
    close(aligned(v, v_want)[0], v_want, dtype, "eigenvectors")
    orthonormal(v, dtype)
    close(v.double() @ torch.diag_embed(w.double()) @ v.double().mT, sym, dtype, "V diag(w) Vᵀ")
    w, v = call("aten::_linalg_eigh.eigenvalues", [a, uplo, False],
                [empty(dtype, *w_want.shape), empty(dtype, 0)])
    close(w, w_want, dtype, "eigenvalues only")
    assert v.shape == (0,)


SVD_SHAPES = [(1, 1), (4, 4), (5, 3), (3, 5), (2, 3, 4, 2), (0, 3, 3), (3, 0), (6, 4)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SVD_SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_svd(dtype, shape, full):
    a = rand(shape, dtype)
    want = aten._linalg_svd(a.double(), full)
    u, s, vh = call("aten::_linalg_svd.U", [transposed(a), full, True, None],
                    [empty(dtype, *w.shape) for w in want])
    close(s, want[1], dtype, "S")
    k = s.shape[-1]
    u_k, signs = aligned(u[..., :k], want[0][..., :k])
    close(u_k, want[0][..., :k], dtype, "U up to sign")
    close(vh[..., :k, :].double() * signs.mT, want[2][..., :k, :], dtype, "Vh up to sign")
    orthonormal(u, dtype)
    orthonormal(vh.mT, dtype)
    close(u[..., :k].double() @ torch.diag_embed(s.double()) @ vh[..., :k, :].double(),
          a.double(), dtype, "U diag(S) Vh")
    u, s, vh = call("aten::_linalg_svd.U", [a, full, False, None],
                    [empty(dtype, 0), empty(dtype, *want[1].shape), empty(dtype, 0)])
    close(s, want[1], dtype, "S only")
    assert u.shape == vh.shape == (0,)


def test_svd_rank_deficient_completes_u():
    a = torch.tensor([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], dtype=torch.float64)
    u, s, vh = call("aten::_linalg_svd.U", [a, True, True, None],
                    [empty(torch.float64, 3, 3), empty(torch.float64, 2),
                     empty(torch.float64, 2, 2)])
    close(s, torch.linalg.svdvals(a), torch.float64)
    orthonormal(u, torch.float64)
    close(u[:, :2] @ torch.diag(s) @ vh, a, torch.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4), (0, 3, 3)])
@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv(dtype, shape, hermitian):
    if hermitian and shape[-1] != shape[-2]:
        return
    a = rand(shape, dtype)
    if hermitian:
        a = a + a.mT
    want = aten.linalg_pinv(a.double(), hermitian=hermitian)
    (p,) = call("aten::linalg_pinv.atol_rtol_tensor_out", [transposed(a), None, None, hermitian],
                [empty(dtype, *want.shape)])
    # pinv's entries scale with 1/σ_min: condition numbers here are below ~100.
    close(p, want, dtype)


@pytest.mark.parametrize("hermitian", [False, True])
def test_pinv_tolerances_drop_small_values(hermitian):
    # Singular values (eigenvalues) 4, 1, 1e-3: atol/rtol decide whether 1e-3 counts.
    q = torch.linalg.qr(rand((3, 3), torch.float64, seed=7))[0]
    a = q @ torch.diag(torch.tensor([4.0, 1.0, 1e-3], dtype=torch.float64)) @ q.mT
    for atol, rtol in ((None, None), (torch.tensor(0.01, dtype=torch.float64), None),
                       (None, torch.tensor(1e-2, dtype=torch.float64)),
                       (torch.tensor(0.0, dtype=torch.float64),
                        torch.tensor(1e-4, dtype=torch.float64))):
        want = aten.linalg_pinv.atol_rtol_tensor(a, atol=atol, rtol=rtol, hermitian=hermitian)
        (p,) = call("aten::linalg_pinv.atol_rtol_tensor_out", [a, atol, rtol, hermitian],
                    [empty(torch.float64, 3, 3)])
        torch.testing.assert_close(p, want, rtol=0, atol=1e-9 * want.abs().max().item())


def test_sweep_compares_vectors_up_to_sign():
    from ember.testing.opinfo_sweep import _compare_sign_ambiguous

    a = rand((2, 5, 3), torch.float32)
    u, s, vh = torch.linalg.svd(a, full_matrices=True)
    flip = torch.tensor([1.0, -1.0, -1.0])
    u2 = u.clone()
    u2[..., :3] *= flip
    assert _compare_sign_ambiguous([u2, s, vh * flip[:, None]], (u, s, vh), torch.float32,
                                   "linalg.svd") is None
    # A singular vector flipped without its partner is wrong.
    problem = _compare_sign_ambiguous([u2, s, vh], (u, s, vh), torch.float32, "linalg.svd")
    assert problem and "output 2 (up to sign)" in problem[1]
    w, q = torch.linalg.eigh(a[0, :3] + a[0, :3].mT)
    assert _compare_sign_ambiguous([w, -q], (w, q), torch.float32, "linalg.eigh") is None
    assert _compare_sign_ambiguous([w + 1e-3, q], (w, q), torch.float32, "linalg.eigh")
    assert _compare_sign_ambiguous([w, q + 1e-3], (w, q), torch.float32, "linalg.eigh")


# --- through the whole flow ------------------------------------------------

def run_program(module, *args):
    from ember.exir import to_edge
    from ember.runtime import Runtime

    program = to_edge(torch.export.export(module, args)).to_executorch()
    return Runtime.get().load_program(program.buffer).load_method("forward").execute(list(args))


class Checked(torch.nn.Module):
    """Ops export wraps in with_effects(_linalg_check_errors)."""

    def forward(self, a, s, b):
        return (torch.linalg.inv(a), torch.linalg.cholesky(s), torch.linalg.solve(a, b),
                torch.linalg.lu_factor(a)[0])


class Unchecked(torch.nn.Module):
    def forward(self, a, s, b):
        lu, piv = torch.linalg.lu_factor_ex(a)[:2]
        sign, logabs = torch.linalg.slogdet(a)
        return (torch.linalg.det(a), sign, logabs, torch.linalg.lu_solve(lu, piv, b),
                torch.linalg.solve_triangular(s, b, upper=False), torch.cholesky_solve(b, s),
                torch.linalg.lu(a)[2], torch.cholesky_inverse(s), torch.linalg.inv_ex(a)[0],
                *torch.linalg.qr(a), torch.geqrf(a)[0], torch.linalg.eigvalsh(s),
                torch.linalg.svdvals(a), torch.linalg.pinv(a), torch.linalg.pinv(s, hermitian=True))


def test_linalg_error_checks_are_dropped_at_to_edge():
    from ember.exir import EdgeCompileConfig, to_edge

    a = general((2, 3, 3), torch.float32)
    ep = torch.export.export(Checked(), (a, spd((3, 3), torch.float32), rand((2, 3, 2),
                                                                              torch.float32)))
    decomposed = ep.run_decompositions()  # where the checks appear
    assert any(n.target is torch.ops.higher_order.with_effects for n in decomposed.graph.nodes)
    config = EdgeCompileConfig(_core_aten_ops_exception_list=[
        aten.linalg_inv_ex.default, aten.linalg_cholesky_ex.default,
        aten._linalg_solve_ex.default, aten.linalg_lu_factor_ex.default])
    edge = to_edge(ep, compile_config=config).exported_program()
    sig = edge.graph_signature
    kinds = {s.kind.name for s in sig.input_specs + sig.output_specs}
    assert "TOKEN" not in kinds
    assert not any("with_effects" in str(n.target) or "check_errors" in str(n.target)
                   for n in edge.graph.nodes)


@pytest.mark.parametrize("module", [Checked, Unchecked])
def test_through_the_whole_flow(module):
    args = (general((2, 3, 3), torch.float32), spd((3, 3), torch.float32, seed=1),
            rand((2, 3, 2), torch.float32, seed=2))
    got = run_program(module(), *args)
    want = module()(*[x.double() for x in args])
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        close(torch.as_tensor(g), w, torch.float32, f"output {i}")


def test_singular_input_runs_without_the_check():
    """linalg.inv of a singular matrix raises in eager; the program gives inv_ex's values."""
    got = run_program(Checked(), torch.ones(2, 3, 3), spd((3, 3), torch.float32),
                      torch.ones(2, 3, 2))
    assert not torch.isfinite(torch.as_tensor(got[0])).all()


class LuSolve(torch.nn.Module):
    def forward(self, lu, piv, b):
        return torch.linalg.lu_solve(lu, piv, b)


def test_column_major_lu_input_in_either_layout():
    """lu_factor's LU is column-major: a program exported with it takes it, and a
    row-major copy is laid out in the program's dim order by Method.execute."""
    from ember.exir import to_edge
    from ember.runtime import Runtime

    lu, piv = torch.linalg.lu_factor(general((2, 4, 4), torch.float32))
    assert not lu.is_contiguous()
    b = rand((2, 4, 3), torch.float32, seed=6)
    program = to_edge(torch.export.export(LuSolve(), (lu, piv, b))).to_executorch()
    method = Runtime.get().load_program(program.buffer).load_method("forward")
    want = torch.linalg.lu_solve(lu.double(), piv, b.double())
    for layout in (lu, lu.contiguous()):
        close(torch.as_tensor(method.execute([layout, piv, b])[0]), want, torch.float32)


class Pinv(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.pinv(x)


def test_empty_input_whose_strides_say_another_order():
    """A [3, 0] tensor with strides (1, 3) (linalg.pinv's OpInfo sample) runs."""
    x = torch.zeros(0, 3).mT
    for layout in (x, x.contiguous()):
        got = run_program(Pinv(), layout)
        assert torch.as_tensor(got[0]).shape == (0, 3)
