"""What XNNPACK (Debian's 2022 build) can run, decided per edge node.

``refusal(node, constant, nhwc)`` returns why a node cannot be lowered (a
short phrase) or None: the checks every op shares (static float32 values,
ranks, dim orders the delegate can bind), then the op's own check from the
registry (``ops/``), which sits beside its lowering. The partitioner and
preprocess both call it, with their own ``constant``: the partitioner's
says which values will reach the delegate as constants, preprocess's which
ones it knows.

Inside an NHWC delegate every rank-4 value is NHWC, so ops whose meaning
depends on the layout are claimed on rank-4 values only in an NHWC form.
This XNNPACK has no transpose, concatenation, batch matmul, tanh, GELU or
layer norm: those stay on the portable kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

import ember.backends.xnnpack.ops  # noqa: F401  (registers every op)
from ember.backends.xnnpack.node_info import (
    first_value,
    float_tensor,
    op_name,
    readable_dim_order,
    tensor_args,
    value,
)
from ember.backends.xnnpack.ops.registry import (
    FREE,
    REGISTRY,
    SPATIAL,
    CheckContext,
    ops_with_layout,
)

Constant = Callable[[Any], bool]

# Constant expressions preprocess evaluates ahead of time (how export
# reshapes a weight): a node of these ops whose inputs are all constant is
# itself constant.
CONSTANT_EXPRESSIONS = frozenset({
    "aten.permute_copy.default",
    "aten.view_copy.default",
    "aten.t_copy.default",
    "aten.squeeze_copy.dims",
    "aten.unsqueeze_copy.default",
    "aten.clone.default",
    "aten._to_copy.default",
})
# Ops that only exist in NHWC form, and ops that run in either layout.
SPATIAL_OPS = ops_with_layout(SPATIAL)
LAYOUT_FREE_OPS = ops_with_layout(FREE) | {"getitem"}


def refusal(node: torch.fx.Node, constant: Constant, nhwc: bool = True) -> str | None:
    """Why XNNPACK cannot run ``node``, or None when it can, in a delegate
    whose rank-4 values are NHWC (``nhwc``) or kept as the program has them."""
    name = op_name(node)
    out = first_value(node)
    if not float_tensor(out):
        return "not a static float32 result"
    if not 1 <= out.dim() <= 6:
        return f"rank {out.dim()} result"
    for a in tensor_args(node):
        v = value(a)
        if not float_tensor(v):
            return f"input {a.name} is not static float32"
        if v.dim() == 0 and not constant(a):
            return "a rank-0 input"
    support = REGISTRY.get(name)
    if support is None:
        return "no XNNPACK operator"
    if support.layout == SPATIAL and not nhwc:
        return "needs XNNPACK's NHWC layout"
    # Any value may become a delegate argument: the runtime binds only the
    # dim orders it can read (contiguous; channels-last when NHWC inside).
    for a in tensor_args(node):
        if not constant(a) and not readable_dim_order(value(a), nhwc):
            return f"input {a.name} has a dim order the delegate cannot bind"
    if not readable_dim_order(out, nhwc):
        return "a result in a dim order the delegate cannot bind"
    return support.check(node, CheckContext(constant, nhwc))
