"""Decompositions Ember adds where PyTorch has none (or only one into prims
ops), for non-core ops export leaves: each rewrites the op into core ops
Ember has kernels for. ``decompose_non_core`` applies them with PyTorch's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten


def _like(random_op: Any) -> Callable[..., torch.Tensor]:
    def decomposition(self: torch.Tensor, *, dtype: torch.dtype | None = None, **_: Any):
        # Layout, device, pin_memory and memory_format do not change the values.
        return random_op(list(self.shape), dtype=dtype or self.dtype)

    return decomposition


def _empty_permuted(size: list[int], physical_layout: list[int], *,
                    dtype: torch.dtype | None = None, **_: Any) -> torch.Tensor:
    # The values are unspecified; Ember plans each tensor's own layout.
    return aten.empty.memory_format(size, dtype=dtype)


EMBER_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.rand_like.default: _like(aten.rand.default),
    aten.randn_like.default: _like(aten.randn.default),
    aten.empty_permuted.default: _empty_permuted,
}
