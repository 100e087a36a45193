"""Non-core ATen ops that Ember runs with a kernel of its own.

The edge dialect holds core ATen ops; these are the exceptions: ops export
leaves in mainstream models for which PyTorch has no decomposition, so Ember
has a portable kernel instead (``histc``: mixture-of-experts routing), and
the non-core ops whose out variants Ember's kernels implement anyway. The
edge verifier allows them and ``decompose_non_core`` keeps them;
python/tests/test_export_left_ops.py checks each has a registered kernel.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten

EMBER_KERNEL_OPS = frozenset({
    aten.histc.default,
    aten.exp2.default,  # PyTorch's decompositions of these end in prims ops
    aten.lgamma.default,
    aten.signbit.default,
    aten.cumprod.default,
    aten.erfc.default,
    aten.fmax.default,
    aten.fmin.default,
    aten.hypot.default,
    aten.nextafter.default,
    aten.gcd.default,
    aten.round.decimals,
    aten.sort.stable,
    aten.max.default,
    aten.min.default,
    aten.sum.default,
    aten.replication_pad1d.default,
    aten.zeros.default,
    aten.cummax.default,  # no decomposition in PyTorch's tables
    aten.cummin.default,
    aten.logcumsumexp.default,
    aten._embedding_bag_forward_only.default,  # nn.functional.embedding_bag without grad
    aten.adaptive_max_pool2d.default,  # and adaptive_max_pool1d, on a height-1 plane
    aten.searchsorted.Tensor,
    aten.bucketize.Tensor,
    aten.angle.default,
    aten.frexp.Tensor,
    # Selection (issue #13): no decomposition in PyTorch's tables
    aten.kthvalue.default,
    aten.median.default,
    aten.median.dim,
    aten.nanmedian.default,
    aten.nanmedian.dim,
    aten.mode.default,
    # Special functions (issue #13): no decomposition in PyTorch's tables
    aten.digamma.default,
    aten.erfinv.default,
    aten.i0.default,
    aten.special_i0e.default,
    aten.special_i1.default,
    aten.special_i1e.default,
    aten.special_ndtri.default,
    aten.special_erfcx.default,
    aten.special_bessel_j0.default,
    aten.special_bessel_j1.default,
    aten.special_bessel_y0.default,
    aten.special_bessel_y1.default,
    aten.special_modified_bessel_i0.default,
    aten.special_modified_bessel_i1.default,
    aten.special_modified_bessel_k0.default,
    aten.special_modified_bessel_k1.default,
    aten.special_scaled_modified_bessel_k0.default,
    aten.special_scaled_modified_bessel_k1.default,
    aten.special_spherical_bessel_j0.default,
    aten.special_airy_ai.default,
    aten.polygamma.default,
    aten.igamma.default,
    aten.igammac.default,
    aten.special_zeta.default,
    aten.special_zeta.self_scalar,
    aten.special_zeta.other_scalar,
    aten.special_chebyshev_polynomial_t.default,
    aten.special_chebyshev_polynomial_t.x_scalar,
    aten.special_chebyshev_polynomial_t.n_scalar,
    aten.special_chebyshev_polynomial_u.default,
    aten.special_chebyshev_polynomial_u.x_scalar,
    aten.special_chebyshev_polynomial_u.n_scalar,
    aten.special_chebyshev_polynomial_v.default,
    aten.special_chebyshev_polynomial_v.x_scalar,
    aten.special_chebyshev_polynomial_v.n_scalar,
    aten.special_chebyshev_polynomial_w.default,
    aten.special_chebyshev_polynomial_w.x_scalar,
    aten.special_chebyshev_polynomial_w.n_scalar,
    aten.special_shifted_chebyshev_polynomial_t.default,
    aten.special_shifted_chebyshev_polynomial_t.x_scalar,
    aten.special_shifted_chebyshev_polynomial_t.n_scalar,
    aten.special_shifted_chebyshev_polynomial_u.default,
    aten.special_shifted_chebyshev_polynomial_u.x_scalar,
    aten.special_shifted_chebyshev_polynomial_u.n_scalar,
    aten.special_shifted_chebyshev_polynomial_v.default,
    aten.special_shifted_chebyshev_polynomial_v.x_scalar,
    aten.special_shifted_chebyshev_polynomial_v.n_scalar,
    aten.special_shifted_chebyshev_polynomial_w.default,
    aten.special_shifted_chebyshev_polynomial_w.x_scalar,
    aten.special_shifted_chebyshev_polynomial_w.n_scalar,
    aten.special_hermite_polynomial_h.default,
    aten.special_hermite_polynomial_h.x_scalar,
    aten.special_hermite_polynomial_h.n_scalar,
    aten.special_hermite_polynomial_he.default,
    aten.special_hermite_polynomial_he.x_scalar,
    aten.special_hermite_polynomial_he.n_scalar,
    aten.special_laguerre_polynomial_l.default,
    aten.special_laguerre_polynomial_l.x_scalar,
    aten.special_laguerre_polynomial_l.n_scalar,
    aten.special_legendre_polynomial_p.default,
    aten.special_legendre_polynomial_p.x_scalar,
    aten.special_legendre_polynomial_p.n_scalar,
    # misc non-core ops (issue #13): kernels, no PyTorch decomposition
    aten.grid_sampler_3d.default,
    aten._upsample_bilinear2d_aa.default,
    aten.fractional_max_pool2d.default,
    aten.fractional_max_pool3d.default,
    aten.histogram.bin_ct,
    aten._histogramdd_bin_edges.default,
    aten._histogramdd_from_bin_cts.default,
})
