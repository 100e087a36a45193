"""Questions about one edge node that the op rules and lowerings share:
its op name, its value, its arguments, its memory layout."""

from __future__ import annotations

import operator
from typing import Any

import torch

from ember.exir.dialects.edge._ops import EdgeOpOverload
from ember.exir.emit.values import dim_order as program_dim_order


def op_name(node: torch.fx.Node) -> str:
    """'aten.convolution.default' for an edge or ATen call node."""
    target = node.target
    if isinstance(target, EdgeOpOverload):
        target = target.op
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._schema.name.split('::')[1]}.{target._overloadname}"
    return getattr(target, "__name__", str(target))


def value(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def first_value(node: Any) -> Any:
    """The value of a node, or of its first output when it has several."""
    v = value(node)
    if isinstance(v, (tuple, list)):
        v = v[0] if v else None
    return v


def arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def static_shape(t: torch.Tensor) -> bool:
    return all(isinstance(d, int) for d in t.shape)


def float_tensor(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and v.dtype == torch.float32 and static_shape(v)


def tensor_args(node: torch.fx.Node) -> list[torch.fx.Node]:
    return [a for a in node.all_input_nodes if isinstance(value(a), torch.Tensor)]


def only_first_output_used(node: torch.fx.Node) -> bool:
    return all(u.target is operator.getitem and u.args[1] == 0 for u in node.users)


def layout_trivial(shape: tuple[int, ...]) -> bool:
    """A rank-4 value whose NCHW and NHWC memory orders coincide."""
    return len(shape) != 4 or shape[1] == 1 or shape[2] * shape[3] == 1


CHANNELS_LAST = (0, 2, 3, 1)


def dim_order(v: torch.Tensor) -> tuple[int, ...]:
    """The dim order the emitted program gives this value (the emitter's rule)."""
    return tuple(program_dim_order(v))


def readable_dim_order(v: torch.Tensor, nhwc: bool) -> bool:
    """Whether a delegate argument in this dim order can be bound: contiguous,
    or channels-last for a rank-4 value of an NHWC delegate (already NHWC).
    The runtime's rule (backends/xnnpack/layout.h, argument_layout)."""
    order = dim_order(v)
    return order == tuple(range(v.dim())) or (nhwc and order == CHANNELS_LAST)
