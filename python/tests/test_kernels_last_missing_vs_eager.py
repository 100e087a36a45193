"""The last OpInfo entries that were "missing an op" (issue #13) against eager: LDLᵀ
(``linalg.ldl_factor(_ex)``, ``linalg.ldl_solve``), ``matrix_exp``, ``combinations`` and
``tensor_split`` by a tensor of indices.

Kernel calls through ``call_kernel`` in float32 and float64 over sizes, batches
(broadcast ones too), empty batches and non-contiguous inputs; then each op through the
whole flow (export -> to_edge -> to_executorch -> runtime).

Tolerances: Ember computes in double; references are eager's float64 results on the
same inputs (float32 inputs widened), so a float32 result differs from them by its own
rounding times the problem's conditioning. Results must agree within ``TOL[dtype]`` ×
max|reference| per output. LD and pivots are eager's (LAPACK sytrf's Bunch-Kaufman
choices): pivots are compared exactly on random matrices (no ties); where the pivoting
is ambiguous (ties in the matrix) the factors are checked instead by rebuilding
P L D Lᵀ Pᵀ, which must equal A within ``TOL`` × max|A|.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
_C = pytest.importorskip("ember._C")

DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: 4e-6, torch.float64: 1e-11}


def symmetric(shape, dtype, seed=0):
    """Random symmetric (indefinite) matrices: X + Xᵀ, which need 2x2 pivots."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    return (x + x.mT).to(dtype)


def rand(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def call(name, args, outs):
    outs = list(outs)
    n = len(args)
    if len(outs) == 1:
        _C.call_kernel(name, list(args) + outs)
    else:
        _C.call_kernel(name, list(args) + outs, returns=list(range(n, n + len(outs))))
    return outs


def close(got, want, dtype, what="", scale_by=None):
    want = want.to(torch.float64)
    ref = want if scale_by is None else scale_by.to(torch.float64)
    scale = max(ref.abs().max().item(), 1.0) if ref.numel() else 1.0
    assert got.shape == want.shape, (what, got.shape, want.shape)
    torch.testing.assert_close(got.to(torch.float64), want, rtol=0, atol=TOL[dtype] * scale,
                               equal_nan=True, msg=what)


def empty(dtype, *shape):
    return torch.empty(shape, dtype=dtype)


def factor_outs(a):
    return [empty(a.dtype, *a.shape), empty(torch.int32, *a.shape[:-1]),
            empty(torch.int32, *a.shape[:-2])]


def ldl_factor(a, check_errors=False):
    return call("aten::linalg_ldl_factor_ex.out", [a, False, check_errors], factor_outs(a))


def ldl_solve(ld, piv, b, hermitian=False):
    batch = torch.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    return call("aten::linalg_ldl_solve.out", [ld, piv, b, hermitian],
                [empty(ld.dtype, *batch, *b.shape[-2:])])[0]


def matrix_exp(a):
    return call("aten::linalg_matrix_exp.out", [a], [empty(a.dtype, *a.shape)])[0]


def rebuild(ld, piv):
    """P L D Lᵀ Pᵀ of one factorisation in sytrf's (uplo=L) representation:
    L = P(1) L(1) P(2) L(2) ..., block by block."""
    ld, piv = ld.double(), piv.tolist()
    n = ld.shape[-1]
    blocks, k = [], 0
    while k < n:
        s = 1 if piv[k] > 0 else 2
        blocks.append((k, s))
        k += s
    d = torch.zeros(n, n, dtype=torch.float64)
    for k, s in blocks:
        d[k:k + s, k:k + s] = ld[k:k + s, k:k + s]
        if s == 2:
            d[k, k + 1] = d[k + 1, k]
    m = d
    for k, s in reversed(blocks):
        lk = torch.eye(n, dtype=torch.float64)
        lk[k + s:, k:k + s] = ld[k + s:, k:k + s]
        m = lk @ m @ lk.mT
        p = torch.arange(n)
        kk, kp = k + s - 1, abs(piv[k]) - 1
        p[kk], p[kp] = kp, kk
        m = m[p][:, p]
    return m


# --- LDLᵀ ---------------------------------------------------------------------------

LDL_SHAPES = [(1, 1), (2, 2), (5, 5), (8, 8), (2, 3, 4, 4), (0, 3, 3), (2, 0, 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", LDL_SHAPES)
def test_ldl_factor_is_eagers(dtype, shape):
    a = symmetric(shape, dtype, seed=len(shape) + shape[-1])
    ld, piv, info = ldl_factor(a)
    want_ld, want_piv, want_info = torch.linalg.ldl_factor_ex(a.double())
    close(ld, want_ld, dtype, "LD")
    assert torch.equal(piv, want_piv), (piv, want_piv)
    assert torch.equal(info, want_info)
    assert ld.dtype == dtype and piv.dtype == torch.int32


def test_ldl_factor_uses_two_by_two_pivots_and_reads_the_lower_triangle():
    # A zero diagonal forces 2x2 blocks; the upper triangle is garbage eager ignores.
    a = symmetric((6, 6), torch.float64, seed=3)
    a.diagonal().zero_()
    a = a + torch.triu(rand((6, 6), torch.float64, seed=4), 1) * 100
    ld, piv, _ = ldl_factor(a)
    want_ld, want_piv, _ = torch.linalg.ldl_factor_ex(a)
    assert (want_piv < 0).any()
    assert torch.equal(piv, want_piv)
    close(ld, want_ld, torch.float64, "LD")


@pytest.mark.parametrize("dtype", DTYPES)
def test_ldl_factor_non_contiguous_input(dtype):
    # A non-symmetric matrix read through its transpose: the lower triangle of Aᵀ.
    a = rand((3, 5, 5), torch.float64, seed=5).to(dtype).mT
    assert not a.is_contiguous()
    ld, piv, info = ldl_factor(a)
    want_ld, want_piv, want_info = torch.linalg.ldl_factor_ex(a.double())
    close(ld, want_ld, dtype, "LD")
    assert torch.equal(piv, want_piv) and torch.equal(info, want_info)
    permuted = symmetric((3, 2, 4, 4), dtype, seed=6).permute(1, 0, 2, 3)
    ld, piv, _ = ldl_factor(permuted)
    want_ld, want_piv, _ = torch.linalg.ldl_factor_ex(permuted.double())
    close(ld, want_ld, dtype, "LD of permuted batch dims")
    assert torch.equal(piv, want_piv)


@pytest.mark.parametrize("a", [
    torch.ones(4, 4), torch.tensor([[0., 1, 1], [1, 0, 1], [1, 1, 0]]),
    torch.tensor([[2., 1, -1, 1], [1, 2, 1, -1], [-1, 1, 2, 1], [1, -1, 1, 2]]),
    torch.tensor([[1., 2, 2], [2, 1, 2], [2, 2, 1]]),
], ids=["ones", "zero-diagonal", "pm-ones", "twos"])
def test_ldl_factor_with_ties_rebuilds_a(a):
    """Equal candidates make the pivot choice ambiguous: check P L D Lᵀ Pᵀ = A."""
    ld, piv, info = ldl_factor(a.double())
    if info.item() == 0:
        close(rebuild(ld, piv), a.double(), torch.float64, "P L D Lᵀ Pᵀ", scale_by=a)
    assert (piv.abs() >= 1).all() and (piv.abs() <= a.shape[-1]).all()


def test_ldl_factor_singular_sets_info():
    z = torch.zeros(3, 3, dtype=torch.float64)
    ld, piv, info = ldl_factor(z)
    want = torch.linalg.ldl_factor_ex(z)
    assert info.item() == want.info.item() == 1
    assert torch.equal(piv, want.pivots) and torch.equal(ld, want.LD)
    with pytest.raises(RuntimeError, match="singular"):
        ldl_factor(z, check_errors=True)


NAN = float("nan")


@pytest.mark.parametrize("a,pivots,info", [
    ([[NAN, 1.0], [1.0, 2.0]], [2, 2], 2),
    ([[NAN]], [1], 1),
    ([[0.0, 1.0, NAN], [1.0, 0.0, 2.0], [NAN, 2.0, 0.0]], [-3, -3, 3], 3),
], ids=["nan-diagonal", "nan-1x1", "nan-below"])
def test_ldl_factor_nan_follows_lapack(a, pivots, info):
    """The documented contract (docs/special-values.md), written out rather than taken
    from eager, whose NaN handling is its BLAS's: a NaN diagonal with zeros below is a
    zero column; a NaN below the diagonal is the pivot (idamax's first NaN)."""
    ld, piv, code = ldl_factor(torch.tensor(a, dtype=torch.float64))
    assert piv.tolist() == pivots and code.item() == info
    if len(a) == 2:
        assert ld[0].tolist() == [2.0, 0.0] and ld[1, 0].item() == 0.5 and ld[1, 1].isnan()


def test_ldl_factor_refuses_other_dtypes_and_shapes():
    with pytest.raises(RuntimeError, match="self"):
        ldl_factor(torch.ones(3, 3, dtype=torch.float16))
    with pytest.raises(RuntimeError, match="self"):
        ldl_factor(torch.ones(3, 4))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((4, 4), (4, 2)), ((2, 5, 5), (2, 5, 3)),
                                    ((2, 4, 4), (4, 2)), ((4, 4), (3, 4, 1)),
                                    ((0, 3, 3), (0, 3, 2)), ((3, 3), (3, 0)),
                                    ((6, 6), (6, 2))])
def test_ldl_solve(dtype, shapes):
    a_shape, b_shape = shapes
    a = symmetric(a_shape, dtype, seed=7)
    if a_shape == (6, 6):  # zero diagonal: 2x2 blocks
        a.diagonal().zero_()
    ld, piv, _ = torch.linalg.ldl_factor_ex(a)
    b = rand(b_shape, dtype, seed=8)
    got = ldl_solve(ld, piv, b, False)
    want = torch.linalg.ldl_solve(ld.double(), piv, b.double())
    close(got, want, dtype)
    if b.dim() >= 2 and b.numel():  # the same B in a transposed layout
        bt = b.mT.contiguous().mT
        got = ldl_solve(ld, piv, bt, True)
        close(got, want, dtype, "transposed B, hermitian=True")


def test_ldl_solve_solves_a_x_equals_b():
    a = symmetric((5, 5), torch.float64, seed=9)
    b = rand((5, 3), torch.float64, seed=10)
    ld, piv, _ = ldl_factor(a)
    x = ldl_solve(ld, piv, b, False)
    close(a @ x, b, torch.float64, "A X", scale_by=torch.linalg.solve(a, b))


def test_ldl_solve_refuses_pivots_outside_the_matrix():
    ld, piv, _ = torch.linalg.ldl_factor_ex(symmetric((3, 3), torch.float64))
    b = torch.ones(3, 1, dtype=torch.float64)
    for bad in ([0, 2, 3], [1, 2, 4], [-2, 2, 3], [1, -3, 3]):
        with pytest.raises(RuntimeError, match="pivots: entry"):
            ldl_solve(ld, torch.tensor(bad, dtype=torch.int32), b)
    with pytest.raises(RuntimeError, match="rows"):
        call("aten::linalg_ldl_solve.out", [ld, piv, torch.ones(4, 1, dtype=torch.float64),
                                            False], [empty(torch.float64, 3, 1)])


# --- matrix_exp ---------------------------------------------------------------------

# 1-norms that select each Padé degree (3, 5, 7, 9, 13) and scaling by 2^-s.
NORMS = [0.01, 0.2, 0.9, 2.0, 5.0, 40.0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 6, 6)])
def test_matrix_exp(dtype, norm, shape):
    a = rand(shape, torch.float64, seed=int(norm * 10) + shape[-1])
    a = a * (norm / torch.linalg.matrix_norm(a, ord=1, keepdim=True)).clamp(max=1e30)
    a = a.to(dtype)
    got = matrix_exp(a)
    close(got, torch.linalg.matrix_exp(a.double()), dtype, f"norm {norm}")
    assert got.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_exp_closed_forms(dtype):
    t = 0.7
    rot = torch.tensor([[0.0, -t], [t, 0.0]], dtype=dtype)
    want = torch.tensor([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]],
                        dtype=torch.float64)
    close(matrix_exp(rot), want, dtype, "rotation")
    nil = torch.tensor([[0.0, 3.0], [0.0, 0.0]], dtype=dtype)
    close(matrix_exp(nil),
          torch.tensor([[1.0, 3.0], [0.0, 1.0]], dtype=torch.float64), dtype, "nilpotent")
    diag = torch.diag(torch.tensor([-3.0, 0.5, 12.0], dtype=dtype))
    close(matrix_exp(diag),
          torch.diag(torch.tensor([-3.0, 0.5, 12.0], dtype=torch.float64).exp()), dtype, "diag")


def test_matrix_exp_empty_non_contiguous_and_non_finite():
    for shape in [(0, 3, 3), (2, 0, 0)]:
        got = matrix_exp(torch.ones(shape))
        assert got.shape == shape
    a = rand((2, 5, 5), torch.float32, seed=11).mT
    assert not a.is_contiguous()
    got = matrix_exp(a)
    close(got, torch.linalg.matrix_exp(a.double()), torch.float32, "transposed")
    bad = torch.tensor([[[1.0, float("nan")], [0.0, 1.0]], [[float("inf"), 0.0], [0.0, 1.0]],
                        [[1.0, 0.0], [0.0, 1.0]]])
    got = matrix_exp(bad)
    want = torch.linalg.matrix_exp(bad)
    assert got[:2].isnan().all() and want[:2].isnan().all()
    close(got[2], want[2], torch.float32, "finite entry of the batch")
    with pytest.raises(RuntimeError, match="self"):
        matrix_exp(torch.ones(2, 3))


# --- combinations: Ember's static decomposition --------------------------------------

@pytest.mark.parametrize("n,r,with_replacement", [
    (1, 1, False), (1, 1, True), (5, 1, False), (4, 2, False), (4, 3, True), (3, 0, False),
    (0, 2, False), (2, 3, False), (3, 3, True), (5, 4, False)])
def test_combinations_decomposition(n, r, with_replacement):
    """Ember's decomposition of combinations, run in eager and traced (export itself
    fails for r >= 2: the whole flow is tested with r = 1 below): eager's values and
    order, with static sizes (no masked_select or nonzero)."""
    from ember.exir.passes.ember_decompositions import EMBER_CIA_DECOMPOSITIONS

    decomposition = EMBER_CIA_DECOMPOSITIONS[torch.ops.aten.combinations.default]
    x = torch.randn(n)
    want = torch.combinations(x, r, with_replacement)
    assert torch.equal(decomposition(x, r, with_replacement), want)
    gm = torch.fx.experimental.proxy_tensor.make_fx(
        lambda x: decomposition(x, r, with_replacement))(x)
    left = {str(node.target) for node in gm.graph.nodes if node.op == "call_function"}
    assert not any("masked_select" in op or "nonzero" in op for op in left), left
    assert torch.equal(gm(x), want)


# --- through the whole flow ------------------------------------------------------------

def run_program(module, *args):
    from ember.exir import to_edge
    from ember.runtime import Runtime

    program = to_edge(torch.export.export(module, args, strict=False)).to_executorch()
    return Runtime.get().load_program(program.buffer).load_method("forward").execute(list(args))


class Ldl(torch.nn.Module):
    def forward(self, a, b):
        ld, piv = torch.linalg.ldl_factor(a)
        ld_ex, piv_ex, info = torch.linalg.ldl_factor_ex(a, hermitian=True)
        return ld, piv, ld_ex, piv_ex, info, torch.linalg.ldl_solve(ld, piv, b)


class MatrixExp(torch.nn.Module):
    def forward(self, a):
        return torch.linalg.matrix_exp(a), torch.matrix_exp(a * 10)


class Combinations(torch.nn.Module):
    def __init__(self, r, with_replacement=False):
        super().__init__()
        self.r, self.with_replacement = r, with_replacement

    def forward(self, x):
        return torch.combinations(x, self.r, self.with_replacement)


class TensorSplit(torch.nn.Module):
    def forward(self, x, indices):
        return torch.tensor_split(x, indices, dim=1)


def test_ldl_through_the_whole_flow():
    a, b = symmetric((2, 5, 5), torch.float32, seed=12), rand((2, 5, 3), torch.float32, seed=13)
    got = run_program(Ldl(), a, b)
    want = Ldl()(a.double(), b.double())
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = torch.as_tensor(g)
        if w.is_floating_point():
            close(g, w, torch.float32, f"output {i}")
        else:
            assert torch.equal(g, w), (i, g, w)


def test_matrix_exp_through_the_whole_flow():
    a = rand((3, 4, 4), torch.float32, seed=14) * 0.5
    got = run_program(MatrixExp(), a)
    for i, (g, w) in enumerate(zip(got, MatrixExp()(a.double()), strict=True)):
        close(torch.as_tensor(g), w, torch.float32, f"output {i}")


@pytest.mark.parametrize("n,with_replacement", [(1, False), (1, True), (6, False)])
def test_combinations_through_the_whole_flow(n, with_replacement):
    x = rand((n,), torch.float32, seed=15)
    got = run_program(Combinations(1, with_replacement), x)
    assert torch.equal(torch.as_tensor(got[0]), torch.combinations(x, 1, with_replacement))


def test_tensor_split_by_a_tensor_through_the_whole_flow():
    """export reads each slice's storage offset to check it is not negative; the check
    and the read go (Ember's slices are copies), the slices run."""
    from ember.exir import to_edge

    x, idx = rand((3, 7, 2), torch.float32, seed=16), torch.tensor([1, 4, 4])
    edge = to_edge(torch.export.export(TensorSplit(), (x, idx), strict=False))
    assert not any("storage_offset" in str(n.target)
                   for n in edge.exported_program().graph.nodes)
    got = run_program(TensorSplit(), x, idx)
    want = TensorSplit()(x, idx)
    assert len(got) == len(want) == 4
    for g, w in zip(got, want, strict=True):
        assert torch.equal(torch.as_tensor(g), w)
