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
})
