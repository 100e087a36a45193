"""Ops that move data without arithmetic: constant pad (either layout),
clone (a copy) and reshape (only where NCHW and NHWC order coincide in an
NHWC delegate)."""

from __future__ import annotations

import torch

from ember.backends.xnnpack.node_info import arg, layout_trivial, value
from ember.backends.xnnpack.ops.registry import DEPENDENT, FREE, CheckContext, register


def check_pad(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    if any(p < 0 for p in node.args[1]):
        return "negative padding"
    return None


@register("aten.constant_pad_nd.default", check=check_pad, layout=FREE)
def lower_pad(b, node: torch.fx.Node) -> None:
    x = value(node.args[0])
    pad = list(node.args[1])
    fill = float(arg(node, 2, "value", 0.0))
    pre, post = [0] * x.dim(), [0] * x.dim()
    for i in range(len(pad) // 2):
        pre[x.dim() - 1 - i] = pad[2 * i]
        post[x.dim() - 1 - i] = pad[2 * i + 1]
    if x.dim() == 4:
        pre, post = b.dims(tuple(pre)), b.dims(tuple(post))
    b.g.add("StaticConstantPad", [b.operand(node.args[0])], b.out(node), node,
            pre_paddings=pre, post_paddings=post, padding_value=fill)


def check_view(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    src, out = value(node.args[0]), value(node)
    if ctx.nhwc and not (layout_trivial(tuple(src.shape)) and layout_trivial(tuple(out.shape))):
        return "reshape of a rank-4 value whose NHWC order differs"
    return None


def check_clone(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    fmt = node.kwargs.get("memory_format")
    if fmt not in (None, torch.preserve_format, torch.contiguous_format):
        return "clone into another memory format"
    return None


def lower_copy(b, node: torch.fx.Node) -> None:
    """A reshape to the result's dims (for clone, the same dims: a copy)."""
    out = b.out(node)
    b.g.add("StaticReshape", [b.operand(node.args[0])], out, node,
            new_shape=b.g.values[out][0])


register("aten.view_copy.default", check=check_view, layout=DEPENDENT)(lower_copy)
register("aten.clone.default", check=check_clone, layout=FREE)(lower_copy)
