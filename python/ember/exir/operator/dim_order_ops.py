"""The ``dim_order_ops`` operators other exporters of the format write.

``_to_dim_order_copy`` is ``_to_copy`` with the memory format given as a dim
order (``[0, 2, 3, 1]`` for channels-last) and ``_clone_dim_order`` the same
for ``clone``; PyTorch does not define the namespace, so Ember does. The out
overloads' argument orders are the ones programs of other exporters name:

    _to_dim_order_copy.out(Tensor self, *, bool non_blocking=False,
                           int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)
    _clone_dim_order.out(Tensor self, *, bool non_blocking=False,
                         int[]? dim_order=None, Tensor(a!) out) -> Tensor(a!)

(the out tensor carries the dtype; ``dim_order=None`` means contiguous). The
eager implementations are the references the runtime's kernels are tested
against.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

_OPTIONS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"
_TAIL = "bool non_blocking=False, int[]? dim_order=None"

SCHEMAS: dict[str, str] = {
    "_to_dim_order_copy": f"(Tensor self, *, {_OPTIONS}, {_TAIL}) -> Tensor",
    "_to_dim_order_copy.out": f"(Tensor self, *, {_TAIL}, Tensor(a!) out) -> Tensor(a!)",
    "_clone_dim_order": f"(Tensor self, *, {_TAIL}) -> Tensor",
    "_clone_dim_order.out": f"(Tensor self, *, {_TAIL}, Tensor(a!) out) -> Tensor(a!)",
}


def _order(self: torch.Tensor, dim_order: Sequence[int] | None) -> list[int]:
    order = list(range(self.dim())) if dim_order is None else [int(d) for d in dim_order]
    if sorted(order) != list(range(self.dim())):
        raise ValueError(f"dim_order {order} is not a permutation of {self.dim()} dims")
    return order


def _copy(
    self: torch.Tensor, dtype: torch.dtype | None, dim_order: Sequence[int] | None
) -> torch.Tensor:
    out = torch.empty_permuted(
        self.shape, _order(self, dim_order), dtype=dtype or self.dtype, device=self.device
    )
    return out.copy_(self)


def _to_dim_order_copy(  # type: ignore[no-untyped-def]
    self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
    dim_order=None,
):
    return _copy(self, dtype, dim_order)


def _clone_dim_order(self, *, non_blocking=False, dim_order=None):  # type: ignore[no-untyped-def]
    return _copy(self, None, dim_order)


def _out(self, *, non_blocking=False, dim_order=None, out):  # type: ignore[no-untyped-def]
    want = _order(self, dim_order)
    if out.dim() == self.dim() and [int(d) for d in out.dim_order()] != want and out.numel() > 1:
        raise ValueError(f"dim_order {want} disagrees with out's dim order {list(out.dim_order())}")
    return out.resize_(self.shape).copy_(self) if out.shape != self.shape else out.copy_(self)


_IMPLS = {
    "_to_dim_order_copy": _to_dim_order_copy,
    "_to_dim_order_copy.out": _out,
    "_clone_dim_order": _clone_dim_order,
    "_clone_dim_order.out": _out,
}

_lib = torch.library.Library("dim_order_ops", "FRAGMENT")


def _register() -> None:
    for qualified, schema in SCHEMAS.items():
        name, _, overload = qualified.partition(".")
        if hasattr(torch.ops.dim_order_ops, name) and (overload or "default") in getattr(
            torch.ops.dim_order_ops, name
        ).overloads():
            continue  # Already defined (by another library, or an earlier import).
        _lib.define(f"{qualified}{schema}")
        _lib.impl(qualified, _IMPLS[qualified], "CompositeExplicitAutograd")


_register()
