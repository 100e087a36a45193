"""Find the out-variant overload of a functional operator from its schemas.

``aten.add.Tensor`` -> ``aten.add.out``, ``aten.randn.default`` ->
``aten.randn.out`` (the out tensor carries dtype and device, so the tensor
options are dropped), ``aten.max_pool2d_with_indices.default`` -> its
``.out`` with two outs.
"""

from __future__ import annotations

import functools

import torch
from torch._ops import OpOverload

from ember.exir.operator.schema import is_out_argument

# Arguments a functional op may have that its out variant takes from `out`.
_TENSOR_OPTIONS = frozenset({"dtype", "layout", "device", "pin_memory"})


def _out_count_matches(op: OpOverload, outs: list[torch._C.Argument]) -> bool:
    returns = op._schema.returns
    if len(outs) == 1 and isinstance(outs[0].type, torch.ListType):
        return len(returns) == 1 and isinstance(returns[0].type, torch.ListType)
    return len(outs) == len(returns) and all(isinstance(r.type, torch.TensorType) for r in returns)


def _dropped_args(op: OpOverload, candidate: OpOverload) -> set[str] | None:
    """Functional args the candidate lacks, or None when it does not fit."""
    outs = [a for a in candidate._schema.arguments if is_out_argument(a)]
    if not outs or not _out_count_matches(op, outs):
        return None
    rest = [a for a in candidate._schema.arguments if not is_out_argument(a)]
    functional = {a.name: a for a in op._schema.arguments}
    names = [a.name for a in rest]
    if any(
        n not in functional or str(functional[n].type) != str(a.type)
        for n, a in zip(names, rest, strict=False)
    ):
        return None
    order = [n for n in functional if n in set(names)]
    if order != names:
        return None
    dropped = set(functional) - set(names)
    return dropped if dropped <= _TENSOR_OPTIONS else None


@functools.cache
def out_variant(op: OpOverload) -> OpOverload | None:
    """The out overload of ``op``, or None when the op has none."""
    if op._schema.is_mutable:
        return None
    if op.namespace == "quantized_decomposed":
        # PyTorch defines no out overloads for these; Ember's module does.
        import ember.exir.operator.quantized_decomposed  # noqa: F401
    elif op.namespace == "ember_quantized":
        import ember.exir.operator.ember_quantized  # noqa: F401
    elif op.namespace == "ember_fused":
        import ember.exir.operator.ember_fused  # noqa: F401
    best: tuple[int, OpOverload] | None = None
    for name in op.overloadpacket.overloads():
        candidate = getattr(op.overloadpacket, name)
        dropped = _dropped_args(op, candidate)
        if dropped is not None and (best is None or len(dropped) < best[0]):
            best = (len(dropped), candidate)
    return best[1] if best else None
