"""Softmax over the innermost dim of XNNPACK's layout: dim 1 of a rank-4
value in an NHWC delegate, the last dim otherwise."""

from __future__ import annotations

import torch

from ember.backends.xnnpack.node_info import value
from ember.backends.xnnpack.ops.registry import DEPENDENT, CheckContext, register


def check_softmax(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    x = value(node.args[0])
    dim = node.args[1] % x.dim()
    if node.args[2]:
        return "half_to_float"
    if ctx.nhwc and ((x.dim() < 4 and dim == x.dim() - 1) or (x.dim() == 4 and dim == 1)):
        return None
    if not ctx.nhwc and dim == x.dim() - 1:
        return None
    return "softmax over a dim that is not innermost in XNNPACK's layout"


@register("aten._softmax.default", check=check_softmax, layout=DEPENDENT)
def lower_softmax(b, node: torch.fx.Node) -> None:
    b.g.add("Softmax", [b.operand(node.args[0])], b.out(node), node)
