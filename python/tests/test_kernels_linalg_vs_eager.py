"""The linalg error checks export wraps in ``with_effects``, dropped at to_edge.

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
    _C.call_kernel(name, list(args) + outs, returns=list(range(n, n + len(outs))))
    return outs


def close(got, want, dtype, what=""):
    want = want.to(torch.float64)
    scale = max(want.abs().max().item(), 1.0) if want.numel() else 1.0
    assert got.shape == want.shape, (what, got.shape, want.shape)
    torch.testing.assert_close(got.to(torch.float64), want, rtol=0, atol=TOL[dtype] * scale,
                               equal_nan=True, msg=what)


def empty(dtype, *shape):
    return torch.empty(shape or (0,), dtype=dtype)


SQUARE = [(1, 1), (3, 3), (5, 5), (2, 3, 4, 4), (0, 3, 3), (2, 0, 0)]


class Checked(torch.nn.Module):
    """Ops export wraps in with_effects(_linalg_check_errors)."""

    def forward(self, a, s, b):
        return (torch.linalg.inv(a), torch.linalg.cholesky(s), torch.linalg.solve(a, b),
                torch.linalg.lu_factor(a)[0])


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
    kinds = {s.kind.name for s in edge.graph_signature.input_specs + edge.graph_signature.output_specs}
    assert "TOKEN" not in kinds
    assert not any("with_effects" in str(n.target) or "check_errors" in str(n.target)
                   for n in edge.graph.nodes)


