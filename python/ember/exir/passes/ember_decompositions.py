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
    if self.dim() == 0:  # a 0-dim self (and source) is one element: reduce as [1]
        one = _index_reduce(aten.view.default(self, [1]), 0, aten.view.default(index, [-1]),
                            aten.view.default(source, [-1]), reduce, include_self=include_self)
        return aten.view.default(one, [])
    dim = dim % max(source.dim(), 1)
    shape = [1] * source.dim()
    shape[dim] = index.numel()
    spread = aten.expand.default(aten.view.default(index, shape), list(source.shape))
    return aten.scatter_reduce.two(self, dim, spread, source, reduce, include_self=include_self)


# --- misc non-core ops (issue #13): rewrites into core ops Ember has kernels for ---

def _addbmm(self: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor, *, beta: Any = 1,
            alpha: Any = 1) -> torch.Tensor:
    # beta*self + alpha*(sum over the batch of batch1[b] @ batch2[b]); beta 0 ignores self
    # (NaN included), as eager.
    prod = aten.sum.dim_IntList(aten.bmm.default(batch1, batch2), [0])
    if alpha != 1:
        prod = aten.mul.Scalar(prod, alpha)
    if beta == 0:
        return aten.expand.default(prod, list(torch.broadcast_shapes(self.shape, prod.shape)))
    base = self if beta == 1 else aten.mul.Scalar(self, beta)
    return aten.add.Tensor(base, prod)


def _trilinear(i1: torch.Tensor, i2: torch.Tensor, i3: torch.Tensor, expand1: list[int],
               expand2: list[int], expand3: list[int], sumdim: list[int],
               unroll_dim: int = 1) -> torch.Tensor:
    # Each input unsqueezed at its expand dims, multiplied, summed over sumdim.
    def spread(t: torch.Tensor, dims: list[int]) -> torch.Tensor:
        for d in sorted(dims):
            t = aten.unsqueeze.default(t, d)
        return t

    prod = aten.mul.Tensor(aten.mul.Tensor(spread(i1, expand1), spread(i2, expand2)),
                           spread(i3, expand3))
    return aten.sum.dim_IntList(prod, list(sumdim)) if sumdim else prod


def _permute_last(self: torch.Tensor, dim1: int, dim2: int) -> tuple[list[int], list[int]]:
    order = [d for d in range(self.dim()) if d not in (dim1, dim2)] + [dim1, dim2]
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return order, inverse


def _diagonal_scatter(self: torch.Tensor, src: torch.Tensor, offset: int = 0, dim1: int = 0,
                      dim2: int = 1) -> torch.Tensor:
    # With dim1, dim2 moved last, the diagonal is index_put at (rows, cols); src
    # already has diagonal()'s shape (other dims, then the diagonal).
    n = self.dim()
    dim1, dim2 = dim1 % n, dim2 % n
    length = max(0, min(self.shape[dim1] + min(offset, 0), self.shape[dim2] - max(offset, 0)))
    if length == 0:
        return aten.clone.default(self)
    order, inverse = _permute_last(self, dim1, dim2)
    moved = aten.permute.default(self, order)
    steps = aten.arange.start(0, length, dtype=torch.long)
    rows = aten.add.Scalar(steps, max(-offset, 0))
    cols = aten.add.Scalar(steps, max(offset, 0))
    indices: list[Any] = [None] * (n - 2) + [rows, cols]
    return aten.permute.default(aten.index_put.default(moved, indices, src), inverse)


def _as_strided_scatter(self: torch.Tensor, src: torch.Tensor, size: list[int],
                        stride: list[int], storage_offset: int | None = None) -> torch.Tensor:
    # Positions in self's (contiguous) storage: storage_offset + sum_k i_k * stride_k.
    flat = aten.view.default(aten.clone.default(self, memory_format=torch.contiguous_format),
                             [self.numel()])
    if src.numel() == 0:
        return aten.view.default(flat, list(self.shape))
    where = aten.full.default([1] * len(size), storage_offset or 0, dtype=torch.long)
    for k, (n, st) in enumerate(zip(size, stride, strict=True)):
        shape = [1] * len(size)
        shape[k] = n
        step = aten.mul.Scalar(aten.arange.start(0, n, dtype=torch.long), st)
        where = aten.add.Tensor(where, aten.view.default(step, shape))
    where = aten.view.default(aten.expand.default(where, list(size)), [src.numel()]) \
        if size else aten.view.default(where, [1])
    values = aten.view.default(aten.clone.default(src, memory_format=torch.contiguous_format),
                               [src.numel()])
    return aten.view.default(aten.index_put.default(flat, [where], values), list(self.shape))


def _put(self: torch.Tensor, index: torch.Tensor, source: torch.Tensor,
         accumulate: bool = False) -> torch.Tensor:
    # self taken as 1-D (row-major); negative indices count from the end, as index_put's.
    if index.numel() == 0:
        return aten.clone.default(self)
    flat = aten.view.default(aten.clone.default(self, memory_format=torch.contiguous_format),
                             [self.numel()])
    idx = aten.view.default(aten.clone.default(index, memory_format=torch.contiguous_format),
                            [index.numel()])
    values = aten.view.default(aten.clone.default(source, memory_format=torch.contiguous_format),
                               [source.numel()])
    return aten.view.default(aten.index_put.default(flat, [idx], values, accumulate),
                             list(self.shape))


def _nonzero_static(self: torch.Tensor, *, size: int, fill_value: int = -1) -> torch.Tensor:
    # The k-th nonzero element (row-major) goes to row k when k < size; the others
    # go to a spare row size, dropped at the end; rows never written keep fill_value.
    n, dims = self.numel(), self.dim()
    out = aten.full.default([size + 1, dims], fill_value, dtype=torch.long)
    if n == 0 or size == 0:
        return aten.slice.Tensor(out, 0, 0, size)
    flat = aten.view.default(aten.clone.default(self, memory_format=torch.contiguous_format), [n])
    hit = aten.ne.Scalar(flat, 0)
    rank = aten.sub.Scalar(aten.cumsum.default(hit, 0, dtype=torch.long), 1)
    keep = aten.logical_and.default(hit, aten.lt.Scalar(rank, size))
    row = aten.where.self(keep, rank, aten.full.default([n], size, dtype=torch.long))
    linear = aten.arange.start(0, n, dtype=torch.long)
    coords, step = [], 1
    for d in reversed(range(dims)):
        c = aten.remainder.Scalar(aten.div.Tensor_mode(linear, step, rounding_mode="floor"),
                                  self.shape[d])
        coords.insert(0, aten.unsqueeze.default(c, 1))
        step *= self.shape[d]
    coords_t = aten.cat.default(coords, 1) if coords else aten.full.default([n, 0], 0,
                                                                              dtype=torch.long)
    return aten.slice.Tensor(aten.index_put.default(out, [row], coords_t), 0, 0, size)


# Random ops: Ember's generator draws uniforms (rand) and normals (randn); the others
# are affine maps of those. Not PyTorch's generator: same distributions, other values.

def _dtype_of(dtype: torch.dtype | None, default: torch.dtype | None = None) -> torch.dtype:
    return dtype or default or torch.get_default_dtype()


def _randint_low(low: int, high: int, size: list[int], *, dtype: torch.dtype | None = None,
                 **_: Any) -> torch.Tensor:
    # floor(u * (high - low)) + low with u a float64 uniform of 53 bits: uniform over
    # [low, high) up to 2^-53 relative bias.
    u = aten.rand.default(list(size), dtype=torch.float64)
    span = aten.floor.default(aten.mul.Scalar(u, high - low))
    v = aten.add.Scalar(span, low)
    return aten._to_copy.default(v, dtype=_dtype_of(dtype, torch.long))


def _randint(high: int, size: list[int], *, dtype: torch.dtype | None = None,
             **kw: Any) -> torch.Tensor:
    return _randint_low(0, high, size, dtype=dtype)


def _randint_like(self: torch.Tensor, high: int, *, dtype: torch.dtype | None = None,
                  **_: Any) -> torch.Tensor:
    return _randint_low(0, high, list(self.shape), dtype=dtype or self.dtype)


def _randint_like_low(self: torch.Tensor, low: int, high: int, *,
                      dtype: torch.dtype | None = None, **_: Any) -> torch.Tensor:
    return _randint_low(low, high, list(self.shape), dtype=dtype or self.dtype)


def _affine(t: torch.Tensor, scale: Any, shift: Any) -> torch.Tensor:
    return aten.add.Tensor(aten.mul.Tensor(t, scale), shift)


def _normal_tensor_tensor(mean: torch.Tensor, std: torch.Tensor, **_: Any) -> torch.Tensor:
    shape = list(torch.broadcast_shapes(mean.shape, std.shape))
    return _affine(aten.randn.default(shape, dtype=mean.dtype), std, mean)


def _normal_tensor_float(mean: torch.Tensor, std: float = 1.0, **_: Any) -> torch.Tensor:
    return aten.add.Tensor(aten.mul.Scalar(aten.randn.default(list(mean.shape), dtype=mean.dtype),
                                           std), mean)


def _normal_float_tensor(mean: float, std: torch.Tensor, **_: Any) -> torch.Tensor:
    return aten.add.Scalar(aten.mul.Tensor(aten.randn.default(list(std.shape), dtype=std.dtype),
                                           std), mean)


def _normal_float_float(mean: float, std: float, size: list[int], *,
                        dtype: torch.dtype | None = None, **_: Any) -> torch.Tensor:
    z = aten.randn.default(list(size), dtype=_dtype_of(dtype))
    return aten.add.Scalar(aten.mul.Scalar(z, std), mean)


def _normal_functional(self: torch.Tensor, mean: float = 0.0, std: float = 1.0,
                       **_: Any) -> torch.Tensor:
    z = aten.randn.default(list(self.shape), dtype=self.dtype)
    return aten.add.Scalar(aten.mul.Scalar(z, std), mean)


def _uniform(self: torch.Tensor, from_: float = 0.0, to: float = 1.0, **kw: Any) -> torch.Tensor:
    low = kw.get("from", from_)
    u = aten.rand.default(list(self.shape), dtype=self.dtype)
    return aten.add.Scalar(aten.mul.Scalar(u, to - low), low)


def _multinomial(self: torch.Tensor, num_samples: int, replacement: bool = False,
                 **_: Any) -> torch.Tensor:
    # With replacement: inverse CDF, each draw searchsorted(cumsum(p), u * sum(p)).
    # Without: the Gumbel-top-k trick, topk(log p + G) with G = -log(-log u), which
    # draws categories one after another with probability proportional to the rest.
    probs = self if self.dtype == torch.float64 else aten._to_copy.default(self,
                                                                          dtype=torch.float64)
    lead = list(self.shape[:-1])
    if replacement:
        cdf = aten.cumsum.default(probs, -1)
        total = aten.slice.Tensor(cdf, -1, self.shape[-1] - 1, self.shape[-1])
        u = aten.mul.Tensor(aten.rand.default(lead + [num_samples], dtype=torch.float64), total)
        picked = aten.searchsorted.Tensor(cdf, u, right=True)
        return aten.clamp.default(picked, None, self.shape[-1] - 1)
    u = aten.rand.default(list(self.shape), dtype=torch.float64)
    gumbel = aten.neg.default(aten.log.default(aten.neg.default(aten.log.default(u))))
    keys = aten.add.Tensor(aten.log.default(probs), gumbel)
    return aten.topk.default(keys, num_samples, -1)[1]


def _rrelu_with_noise_functional(self: torch.Tensor, noise: torch.Tensor, lower: Any = 0.125,
                                 upper: Any = 1.0 / 3.0, training: bool = False,
                                 generator: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
    # Training: each negative element is scaled by a slope drawn from U(lower, upper),
    # noise_out holds the slopes (1 elsewhere). Eval: leaky_relu with the mean slope,
    # noise unchanged.
    negative = aten.lt.Scalar(self, 0)
    if not training:
        slope = (float(lower) + float(upper)) / 2
        return aten.where.self(negative, aten.mul.Scalar(self, slope), self), \
            aten.clone.default(noise)
    u = aten.rand.default(list(self.shape), dtype=self.dtype)
    slopes = aten.add.Scalar(aten.mul.Scalar(u, float(upper) - float(lower)), float(lower))
    slopes = aten.where.self(negative, slopes, aten.full_like.default(self, 1))
    return aten.mul.Tensor(self, slopes), aten._to_copy.default(slopes, dtype=noise.dtype)


def _resize(self: torch.Tensor, size: list[int], *, memory_format: Any = None) -> torch.Tensor:
    # The first prod(size) elements of self's (row-major) storage; where size asks
    # for more, the new elements (uninitialised in eager) are zeros.
    n, m = self.numel(), math.prod(size)
    flat = aten.view.default(aten.clone.default(self, memory_format=torch.contiguous_format), [n])
    if m <= n:
        flat = aten.slice.Tensor(flat, 0, 0, m)
    else:
        flat = aten.cat.default([flat, aten.zeros.default([m - n], dtype=self.dtype)])
    return aten.view.default(aten.clone.default(flat), list(size))


_SEGMENT_REDUCE = {"max": ("amax", -math.inf), "min": ("amin", math.inf), "sum": ("sum", 0),
                   "prod": ("prod", 1), "mean": ("sum", 0)}


def _segment_reduce(data: torch.Tensor, reduce: str, *, lengths: torch.Tensor | None = None,
                    indices: torch.Tensor | None = None, offsets: torch.Tensor | None = None,
                    axis: int = 0, unsafe: bool = False, initial: Any = None) -> torch.Tensor:
    # Element j along axis belongs to segment searchsorted(ends, j, right=True) (S, a
    # spare slot dropped at the end, past the last segment); a scatter_reduce from
    # `initial` (or the reduction's identity) then reduces each segment; mean divides
    # the sum by the length (an empty segment: initial, or 0/0 = NaN as eager).
    if reduce not in _SEGMENT_REDUCE or (lengths is None and offsets is None):
        raise NotImplementedError(f"segment_reduce: {reduce}, lengths or offsets needed")
    axis %= data.dim()
    lead, n, trail = list(data.shape[:axis]), data.shape[axis], list(data.shape[axis + 1:])
    if offsets is not None:
        segments = offsets.shape[-1] - 1
        offsets = aten._to_copy.default(offsets, dtype=torch.long)
        ends = aten.slice.Tensor(offsets, -1, 1, segments + 1)
        starts = aten.slice.Tensor(offsets, -1, 0, segments)
        sizes = aten.sub.Tensor(ends, starts)
    else:
        segments = lengths.shape[-1]
        sizes = aten._to_copy.default(lengths, dtype=torch.long)
        ends = aten.cumsum.default(sizes, -1)
    ends = aten.clone.default(ends, memory_format=torch.contiguous_format)
    pos = aten.expand.default(aten.arange.start(0, n, dtype=torch.long), lead + [n])
    pos = aten.clone.default(pos, memory_format=torch.contiguous_format)
    seg = aten.searchsorted.Tensor(ends, pos, right=True)
    if offsets is not None:  # before the first offset: dropped too
        first = aten.slice.Tensor(offsets, -1, 0, 1)
        seg = aten.where.self(aten.lt.Tensor(pos, first),
                              aten.full_like.default(seg, segments), seg)
    spread = [1] * len(trail)
    index = aten.expand.default(aten.view.default(seg, lead + [n] + spread), list(data.shape))
    how, identity = _SEGMENT_REDUCE[reduce]
    start = identity if initial is None else initial
    base = aten.full.default(lead + [segments + 1] + trail, start, dtype=data.dtype)
    out = aten.scatter_reduce.two(base, axis, index, data, how, include_self=True)
    out = aten.slice.Tensor(out, axis, 0, segments)
    if reduce == "mean":
        count = aten._to_copy.default(aten.view.default(sizes, lead + [segments] + spread),
                                      dtype=data.dtype)
        mean = aten.div.Tensor(out, count)
        if initial is not None:
            mean = aten.where.self(aten.eq.Scalar(count, 0), out, mean)
        out = mean
    return out


# Data-dependent sizes: nonzero gives the count, bounded by numel at export (Ember
# plans that bound; the kernel writes the real size into the dynamic dim).

def _flat(t: torch.Tensor) -> torch.Tensor:
    return aten.view.default(aten.clone.default(t, memory_format=torch.contiguous_format),
                             [t.numel()])


def _positions(mask: torch.Tensor) -> torch.Tensor:
    """The positions where the 1-D bool ``mask`` is true, as a 1-D int64 tensor."""
    return aten.view.default(aten.nonzero.default(mask), [-1])


def _masked_select(self: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    shape = list(torch.broadcast_shapes(self.shape, mask.shape))
    values = _flat(aten.expand.default(self, shape))
    picked = _flat(aten.expand.default(mask, shape))
    return aten.index.Tensor(values, [_positions(picked)])


def _consecutive_groups(flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(first value of each run of equal elements, each element's run, run lengths) of a
    non-empty 1-D tensor; NaN differs from everything, as eager's != does."""
    n = flat.shape[0]
    change = aten.ne.Tensor(aten.slice.Tensor(flat, 0, 1, n), aten.slice.Tensor(flat, 0, 0, n - 1))
    starts = aten.cat.default([aten.full.default([1], True, dtype=torch.bool), change])
    values = aten.index.Tensor(flat, [_positions(starts)])
    run = aten.sub.Scalar(aten.cumsum.default(starts, 0, dtype=torch.long), 1)
    counts = aten.scatter_add.default(aten.zeros_like.default(values, dtype=torch.long), 0, run,
                                      aten.ones_like.default(run))
    return values, run, counts


def _unique_consecutive(self: torch.Tensor, return_inverse: bool = False,
                        return_counts: bool = False, dim: int | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if dim is not None and self.dim() > 1:
        raise NotImplementedError("unique_consecutive along a dim")
    if self.numel() == 0:
        empty = aten.zeros.default([0], dtype=torch.long)
        return aten.view.default(aten.clone.default(self), [0]), \
            aten.zeros.default(list(self.shape), dtype=torch.long), empty
    values, run, counts = _consecutive_groups(_flat(self))
    inverse = aten.view.default(run, list(self.shape)) if return_inverse else \
        aten.zeros.default([0], dtype=torch.long)
    return values, inverse, counts if return_counts else aten.zeros.default([0], dtype=torch.long)


def _unique2(self: torch.Tensor, sorted: bool = True, return_inverse: bool = False,
             return_counts: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # Eager's CPU unique sorts whatever `sorted` says (NaNs last, each its own
    # value): a stable sort, then the runs of equal values; an element's index
    # is its run's, scattered back through the sort's permutation.
    if self.numel() == 0:
        return aten.view.default(aten.clone.default(self), [0]), \
            aten.zeros.default(list(self.shape), dtype=torch.long), \
            aten.zeros.default([0], dtype=torch.long)
    ordered, perm = aten.sort.stable(_flat(self), stable=True, dim=0)
    values, run, counts = _consecutive_groups(ordered)
    inverse = aten.zeros.default([0], dtype=torch.long)
    if return_inverse:
        inverse = aten.scatter.src(aten.zeros_like.default(run), 0, perm, run)
        inverse = aten.view.default(inverse, list(self.shape))
    return values, inverse, counts if return_counts else aten.zeros.default([0], dtype=torch.long)


EMBER_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.var_mean.correction: _var_mean,
    aten.std_mean.correction: _std_mean,
    aten.copysign.Tensor: _copysign_tensor,
    aten.copysign.Scalar: _copysign_scalar,
    aten.index_reduce.default: _index_reduce,
    aten.rand_like.default: _like(aten.rand.default),
    aten.randn_like.default: _like(aten.randn.default),
    aten.empty_permuted.default: _empty_permuted,
    # misc non-core ops (issue #13)
    aten.addbmm.default: _addbmm,
    aten._trilinear.default: _trilinear,
    aten.diagonal_scatter.default: _diagonal_scatter,
    aten.as_strided_scatter.default: _as_strided_scatter,
    aten.put.default: _put,
    aten.nonzero_static.default: _nonzero_static,
    aten.randint.default: _randint,
    aten.randint.low: _randint_low,
    aten.randint_like.default: _randint_like,
    aten.randint_like.low_dtype: _randint_like_low,
    aten.normal.Tensor_Tensor: _normal_tensor_tensor,
    aten.normal.Tensor_float: _normal_tensor_float,
    aten.normal.float_Tensor: _normal_float_tensor,
    aten.normal.float_float: _normal_float_float,
    aten.normal_functional.default: _normal_functional,
    aten.uniform.default: _uniform,
    aten.multinomial.default: _multinomial,
    aten.rrelu_with_noise_functional.default: _rrelu_with_noise_functional,
    aten.resize.default: _resize,
    aten.segment_reduce.default: _segment_reduce,
    aten.masked_select.default: _masked_select,
    aten.unique_consecutive.default: _unique_consecutive,
    aten._unique2.default: _unique2,
}


# combinations (issue #13): PyTorch's CompositeImplicit kernel picks the index tuples with
# masked_select, a data-dependent size whose bound export loses for inputs of one or two
# elements (and whose decomposition then cannot be traced: its nonzero's bound differs).
# How many tuples there are is known from the shape alone, so nonzero_static over the same
# mask gives them with a static size, in the same (row-major) order.

def _combinations(self: torch.Tensor, r: int = 2, with_replacement: bool = False
                  ) -> torch.Tensor:
    n = self.shape[0]
    if r == 0:
        return aten.full.default([0], 0, dtype=self.dtype)
    count = math.comb(n + r - 1, r) if with_replacement else math.comb(n, r)
    if count == 0:
        return aten.full.default([0, r], 0, dtype=self.dtype)
    # grid[j][i_0, ..., i_{r-1}] = i_j; a tuple is kept when its indices (strictly) increase.
    index = aten.arange.start(0, n, dtype=torch.long)
    grid = [aten.expand.default(aten.view.default(index, [n if d == j else 1 for d in range(r)]),
                                [n] * r) for j in range(r)]
    keep = aten.full.default([n], True, dtype=torch.bool)
    for j in range(r - 1):
        ordered = (aten.le.Tensor if with_replacement else aten.lt.Tensor)(grid[j], grid[j + 1])
        keep = ordered if j == 0 else aten.logical_and.default(keep, ordered)
    tuples = _nonzero_static(keep, size=count)  # [count, r]: the kept (i_0, ..., i_{r-1})
    return aten.index.Tensor(self, [tuples])


# Ops PyTorch decomposes through their CompositeImplicit kernels in run_decompositions, where
# Ember decomposes them differently (``to_edge`` adds these to the default table).
EMBER_CIA_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.combinations.default: _combinations,
}
