"""Keep ``scaled_dot_product_attention`` whole, as ``ember_fused::sdpa``.

``to_edge``'s core-ATen decomposition turns every SDPA call into its math
form: scale, permute, expand and view both operands, ``bmm``, the mask add or
causal ``where``, a (safe) softmax, ``bmm`` again and permute/clone/permute
back; the score matrix is written and read several times. For the calls its
kernel takes, Ember decomposes SDPA into one ``ember_fused::sdpa``
(``kernels/portable/op_sdpa.cpp``: tiles on the GEMM microkernels, no score
matrix) instead. This is a decomposition (an entry of the table
``run_decompositions`` uses), not a graph rewrite: it sees each call's
arguments wherever the call is, control-flow branches included, and the
node keeps its stack trace.

A call is fused when (checked on its fake tensors, shapes known at export or
provably equal):

- query, key and value are float32 and 4-D, query ``[B, H, Lq, D]`` and key,
  value ``[B, Hkv, Lk, D]`` with one shape, ``D <= 512`` and ``H == Hkv``, or
  ``enable_gqa`` and ``H % Hkv == 0``;
- no dropout, and not both ``is_causal`` and a mask (torch refuses that);
- a mask, if any, is bool or float32, 2 to 4 dims, its last dim ``Lk`` and
  every other dim 1 or the size it broadcasts to.

Anything else keeps PyTorch's decomposition. ``EdgeCompileConfig(
fuse_attention=False)`` turns this off (programs without Ember's op, for
other runtimes of the format); an SDPA in ``preserve_ops`` is never fused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true

import ember.exir.operator.ember_fused  # noqa: F401  (defines torch.ops.ember_fused.sdpa)

aten = torch.ops.aten

SDPA = aten.scaled_dot_product_attention.default

# The row kernel's limit (kernels/portable/util/sdpa_f32.h, kSdpaMaxHeadDim).
MAX_HEAD_DIM = 512


def _same(a: Any, b: Any) -> bool:
    return bool(statically_known_true(a == b))


def fusable(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
            attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
            is_causal: bool = False, enable_gqa: bool = False) -> bool:
    """Whether ember_fused::sdpa computes this call (see the module's text)."""
    tensors = (query, key, value)
    if any(not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or t.dim() != 4
           for t in tensors):
        return False
    if dropout_p != 0.0 or (is_causal and attn_mask is not None):
        return False
    b, h, _, d = query.shape
    if not all(_same(x, y) for x, y in zip(key.shape, value.shape)):
        return False
    if not (_same(key.shape[0], b) and _same(key.shape[3], d)):
        return False
    if not isinstance(d, int) or d > MAX_HEAD_DIM:
        return False
    hkv = key.shape[1]
    if not _same(hkv, h):
        if not (enable_gqa and isinstance(h, int) and isinstance(hkv, int) and hkv > 0
                and h % hkv == 0):
            return False
    if attn_mask is not None:
        m = attn_mask
        if m.dtype not in (torch.bool, torch.float32) or not 2 <= m.dim() <= 4:
            return False
        if not _same(m.shape[-1], key.shape[2]):
            return False
        full = (b, h, query.shape[2])
        for size, want in zip(m.shape[:-1], full[len(full) - (m.dim() - 1):]):
            if not (_same(size, 1) or _same(size, want)):
                return False
    return True


def fused_sdpa_decomposition(fallback: Callable[..., Any]) -> Callable[..., Any]:
    """The decomposition of SDPA: ember_fused::sdpa where ``fusable``, else
    ``fallback`` (the table's own entry)."""

    def decomposition(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                      is_causal: bool = False, scale: float | None = None, *,
                      enable_gqa: bool = False) -> torch.Tensor:
        if fusable(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
            return torch.ops.ember_fused.sdpa.default(query, key, value, attn_mask, is_causal,
                                                      scale)
        return fallback(query, key, value, attn_mask, dropout_p, is_causal, scale,
                        enable_gqa=enable_gqa)

    return decomposition
