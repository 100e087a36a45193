"""Elementwise ops: binary arithmetic with broadcasting, unary math, clamps
(relu, relu6/hardtanh, clamp), ELU and leaky ReLU. All run in either layout."""

from __future__ import annotations

import torch

from ember.backends.xnnpack.node_info import arg, op_name, value
from ember.backends.xnnpack.ops.registry import FREE, CheckContext, register

BINARY = {
    "aten.add.Tensor": "Add",
    "aten.sub.Tensor": "Subtract",
    "aten.mul.Tensor": "Multiply",
    "aten.div.Tensor": "Divide",
    "aten.maximum.default": "Maximum",
    "aten.minimum.default": "Minimum",
    "aten.add.Scalar": "Add",
    "aten.sub.Scalar": "Subtract",
    "aten.mul.Scalar": "Multiply",
    "aten.div.Scalar": "Divide",
}
UNARY = {
    "aten.sigmoid.default": "Sigmoid",
    "aten.hardswish.default": "Hardswish",
    "aten.abs.default": "Abs",
    "aten.neg.default": "Negate",
    "aten.floor.default": "Floor",
    "aten.ceil.default": "Ceiling",
    "aten.sqrt.default": "SquareRoot",
}


def check_binary(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    name = op_name(node)
    if name.startswith(("aten.add", "aten.sub")) and arg(node, 2, "alpha", 1) != 1:
        return "alpha != 1"
    out = value(node)
    if ctx.nhwc and out.dim() == 4:
        for a in node.args[:2]:
            v = value(a)
            activation = isinstance(a, torch.fx.Node) and not ctx.constant(a)
            if activation and v.dim() != 4 and v.numel() != 1:
                return "a rank-4 result from a lower-rank activation (layouts differ)"
    return None


@register(*BINARY, check=check_binary, layout=FREE)
def lower_binary(b, node: torch.fx.Node) -> None:
    rank = value(node).dim()
    x = b.operand(node.args[0], rank)
    y = b.operand(node.args[1], rank)
    b.g.add(BINARY[op_name(node)], [x, y], b.out(node), node)


@register(*UNARY, layout=FREE)
def lower_unary(b, node: torch.fx.Node) -> None:
    b.g.add(UNARY[op_name(node)], [b.operand(node.args[0])], b.out(node), node)


def _bounds(node: torch.fx.Node) -> tuple[object, object]:
    name = op_name(node)
    if name == "aten.relu.default":
        return 0.0, None
    if name == "aten.hardtanh.default":
        return arg(node, 1, "min_val", -1.0), arg(node, 2, "max_val", 1.0)
    return arg(node, 1, "min"), arg(node, 2, "max")


def check_clamp(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    lo, hi = _bounds(node)
    for bound in (lo, hi):
        if bound is not None and not isinstance(bound, (int, float)):
            return "tensor clamp bounds"
    if lo is not None and hi is not None and lo > hi:
        return "min > max"
    return None


@register("aten.relu.default", "aten.hardtanh.default", "aten.clamp.default",
          check=check_clamp, layout=FREE)
def lower_clamp(b, node: torch.fx.Node) -> None:
    lo, hi = _bounds(node)
    b.g.add("Clamp", [b.operand(node.args[0])], b.out(node), node,
            output_min=-float("inf") if lo is None else float(lo),
            output_max=float("inf") if hi is None else float(hi))


def check_elu(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    if arg(node, 2, "scale", 1) != 1 or arg(node, 3, "input_scale", 1) != 1:
        return "scaled ELU"
    return None


@register("aten.elu.default", check=check_elu, layout=FREE)
def lower_elu(b, node: torch.fx.Node) -> None:
    b.g.add("Elu", [b.operand(node.args[0])], b.out(node), node,
            alpha=float(arg(node, 1, "alpha", 1.0)))


@register("aten.leaky_relu.default", layout=FREE)
def lower_leaky_relu(b, node: torch.fx.Node) -> None:
    b.g.add("LeakyRelu", [b.operand(node.args[0])], b.out(node), node,
            alpha=float(arg(node, 1, "negative_slope", 0.01)))
