"""Out variants: ``aten_mm_default = mm(a, x)`` becomes
``alloc = alloc(((2, 2), torch.float32)); aten_mm_default = aten.mm.out(a, x, out=alloc)``.

Each op's result tensor is made explicit as an ``alloc`` node, which the
memory planner then places; node names stay those of the edge graph. A
tensor with symbolic sizes gets an alloc of its upper-bound shape. Ops on
symbolic sizes (``sym_size.int``, ``_assert_scalar``) have no out variant:
they stay as they are, as plain ATen ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OpOverload

from ember.exir.dialects.edge._ops import EdgeOpOverload
from ember.exir.memory import alloc
from ember.exir.operator.out_variant import out_variant
from ember.exir.operator.schema import bind, out_argument_names, unbind


ShapeOf = Callable[[torch.Tensor, str], tuple[int, ...]]


def _static_shape(val: torch.Tensor, what: str) -> tuple[int, ...]:
    return tuple(int(s) for s in val.shape)


def _spec(val: Any, node: torch.fx.Node, shape_of: ShapeOf) -> tuple[tuple[int, ...], torch.dtype]:
    if not isinstance(val, torch.Tensor):
        raise TypeError(f"{node.name}: expected a tensor result, got {type(val)}")
    return shape_of(val, f"the result of {node.name}"), val.dtype


def _alloc(
    graph: torch.fx.Graph, val: Any, node: torch.fx.Node, shape_of: ShapeOf
) -> torch.fx.Node:
    if isinstance(val, (list, tuple)):
        spec: Any = [_spec(v, node, shape_of) for v in val]
    else:
        spec = _spec(val, node, shape_of)
    out = graph.call_function(alloc, (spec,))
    out.meta["val"] = val
    return out


def _is_scalar_op(op: OpOverload) -> bool:
    """Ops that return nothing or only scalars (``sym_size.int``, ``_assert_scalar``)."""
    return not any(
        isinstance(r.type, (torch.TensorType, torch.ListType, torch.OptionalType))
        for r in op._schema.returns
    ) and not op._schema.is_mutable


def _to_out_variant(
    gm: torch.fx.GraphModule, node: torch.fx.Node, op: OpOverload, shape_of: ShapeOf
) -> None:
    out_op = out_variant(op)
    if out_op is None:
        raise RuntimeError(
            f"operator {op} (node {node.name}) has no out variant the runtime can run"
        )
    bound = bind(op._schema, node.args, node.kwargs)
    kept = {a.name for a in out_op._schema.arguments}
    bound = {k: v for k, v in bound.items() if k in kept}
    names = out_argument_names(out_op)
    val = node.meta["val"]
    with gm.graph.inserting_before(node):
        if len(names) == 1:
            bound[names[0]] = _alloc(gm.graph, val, node, shape_of)
        else:
            for name, v in zip(names, val, strict=False):
                bound[name] = _alloc(gm.graph, v, node, shape_of)
    node.target = out_op
    node.args, node.kwargs = unbind(out_op._schema, bound)
    if not out_op._schema.returns:  # e.g. split_copy.out(..., Tensor(a!)[] out) -> ()
        node.replace_all_uses_with(bound[names[0]], delete_user_cb=lambda user: user is not node)


def to_out_variants(gm: torch.fx.GraphModule, shape_of: ShapeOf = _static_shape) -> None:
    """Rewrite every edge op of ``gm`` into its out variant, in place.
    ``shape_of(val, what)`` gives the planned (upper-bound) shape of a result."""
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        op = node.target.op if isinstance(node.target, EdgeOpOverload) else node.target
        if isinstance(op, OpOverload) and _is_scalar_op(op):
            node.target = op
        elif isinstance(op, OpOverload):
            _to_out_variant(gm, node, op, shape_of)
    gm.recompile()
