"""Dense layers: linear, addmm and mm with a constant weight, lowered to
XNNPACK's fully connected node (weight [out, in])."""

from __future__ import annotations

from typing import Any

import torch

from ember.backends.xnnpack.blob_graph import NO_VALUE
from ember.backends.xnnpack.node_info import arg, layout_trivial, value
from ember.backends.xnnpack.ops.registry import DEPENDENT, CheckContext, register


def _fully_connected(b, node: torch.fx.Node, x: Any, weight: torch.Tensor,
                     bias: torch.Tensor | None) -> None:
    """y = x @ weight.T + bias with weight [out, in]."""
    bias_id = b.g.constant(bias.reshape(-1)) if bias is not None else NO_VALUE
    b.g.add("FullyConnected", [b.operand(x), b.g.constant(weight), bias_id], b.out(node), node)


def check_addmm(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    bias, x, w = node.args[0], node.args[1], node.args[2]
    if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
        return "beta or alpha != 1"
    if not ctx.constant(w) or not ctx.constant(bias):
        return "weight or bias computed at run time"
    n = value(w).shape[1]
    if value(bias).numel() != n or value(bias).shape[-1] != n:
        return "bias is not one value per output"
    return None if value(x).dim() == 2 else "not a matrix"


@register("aten.addmm.default", check=check_addmm, layout=DEPENDENT)
def lower_addmm(b, node: torch.fx.Node) -> None:
    bias, x, w = node.args[:3]
    _fully_connected(b, node, x, b.known(w).t(), b.known(bias))


def check_mm(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    return None if ctx.constant(node.args[1]) else "both operands computed at run time"


@register("aten.mm.default", check=check_mm, layout=DEPENDENT)
def lower_mm(b, node: torch.fx.Node) -> None:
    x, w = node.args[:2]
    _fully_connected(b, node, x, b.known(w).t(), None)


def check_linear(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    w, bias = node.args[1], arg(node, 2, "bias")
    if not ctx.constant(w) or (bias is not None and not ctx.constant(bias)):
        return "weight or bias computed at run time"
    x, out = value(node.args[0]), value(node)
    if ctx.nhwc and not (layout_trivial(tuple(x.shape)) and layout_trivial(tuple(out.shape))):
        return "a rank-4 value whose NHWC order differs (the last dim would be C)"
    return None


@register("aten.linear.default", check=check_linear, layout=DEPENDENT)
def lower_linear(b, node: torch.fx.Node) -> None:
    bias = arg(node, 2, "bias")
    _fully_connected(b, node, node.args[0], b.known(node.args[1]),
                     b.known(bias) if bias is not None else None)
