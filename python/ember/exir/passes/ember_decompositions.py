"""Decompositions Ember adds where PyTorch has none (or only one into prims
ops), for non-core ops export leaves: each rewrites the op into core ops
Ember has kernels for. ``decompose_non_core`` applies them with PyTorch's."""

from __future__ import annotations

import math
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


def _var_mean(self: torch.Tensor, dim: list[int] | None = None, *, correction: Any = None,
              keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    var = aten.var.correction(self, dim, correction=correction, keepdim=keepdim)
    return var, aten.mean.dim(self, dim, keepdim)


def _std_mean(self: torch.Tensor, dim: list[int] | None = None, *, correction: Any = None,
              keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    var, mean = _var_mean(self, dim, correction=correction, keepdim=keepdim)
    return aten.sqrt.default(var), mean


def _magnitude(self: torch.Tensor) -> torch.Tensor:
    a = aten.abs.default(self)
    return a if a.is_floating_point() else aten._to_copy.default(
        a, dtype=torch.get_default_dtype())


def _copysign_tensor(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    # The sign bit of other (so -0 and -NaN count as negative), as eager.
    a = _magnitude(self)
    return aten.where.self(aten.signbit.default(other), aten.neg.default(a), a)


def _copysign_scalar(self: torch.Tensor, other: Any) -> torch.Tensor:
    a = _magnitude(self)
    return aten.neg.default(a) if math.copysign(1.0, float(other)) < 0 else a


def _index_reduce(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor,
                  reduce: str, *, include_self: bool = True) -> torch.Tensor:
    # index_reduce along dim = scatter_reduce with the index repeated over
    # source's other dims.
    dim = dim % max(source.dim(), 1)
    shape = [1] * source.dim()
    shape[dim] = index.numel()
    spread = aten.expand.default(aten.view.default(index, shape), list(source.shape))
    return aten.scatter_reduce.two(self, dim, spread, source, reduce, include_self=include_self)


EMBER_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.var_mean.correction: _var_mean,
    aten.std_mean.correction: _std_mean,
    aten.copysign.Tensor: _copysign_tensor,
    aten.copysign.Scalar: _copysign_scalar,
    aten.index_reduce.default: _index_reduce,
    aten.rand_like.default: _like(aten.rand.default),
    aten.randn_like.default: _like(aten.randn.default),
    aten.empty_permuted.default: _empty_permuted,
}
