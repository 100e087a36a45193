"""Spatial ops that exist only in NHWC form: max and average pooling,
adaptive average pooling, mean over H and W, bilinear upsampling."""

from __future__ import annotations

from typing import Any

import torch

from ember.backends.xnnpack.node_info import arg, only_first_output_used, value
from ember.backends.xnnpack.ops.registry import SPATIAL, CheckContext, register

_ALIGN_CORNERS = 0x00000008


def _pair(v: Any) -> list[int]:
    v = list(v)
    return v * 2 if len(v) == 1 else v


def _ceil_is_floor(node: torch.fx.Node) -> bool:
    """True when ceil_mode gives the same output size as floor mode."""
    x = value(node.args[0])
    kernel = _pair(node.args[1])
    stride = _pair(arg(node, 2, "stride", []) or kernel)
    padding = _pair(arg(node, 3, "padding", [0, 0]))
    dilation = _pair(arg(node, 4, "dilation", [1, 1]))
    for d in range(2):
        span = x.shape[2 + d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1
        if span % stride[d] != 0:
            return False
    return True


def _window(kernel: Any, stride: Any, padding: Any, dilation: Any) -> dict[str, Any]:
    kernel, padding, dilation = _pair(kernel), _pair(padding), _pair(dilation)
    stride = _pair(stride) if stride else kernel
    return {
        "padding": [padding[0], padding[1], padding[0], padding[1]],
        "pooling": kernel,
        "stride": stride,
        "dilation": dilation,
    }


def check_max_pool(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    if value(node.args[0]).dim() != 4:
        return "not 2-D pooling"
    if not only_first_output_used(node):
        return "pooling indices are used"
    if arg(node, 5, "ceil_mode", False) and not _ceil_is_floor(node):
        return "ceil_mode changes the output size"
    return None


@register("aten.max_pool2d_with_indices.default", check=check_max_pool, layout=SPATIAL)
def lower_max_pool(b, node: torch.fx.Node) -> None:
    window = _window(node.args[1], arg(node, 2, "stride", []), arg(node, 3, "padding", [0, 0]),
                     arg(node, 4, "dilation", [1, 1]))
    b.g.add("MaxPooling2d", [b.operand(node.args[0])], b.out(node), node, **window)


def check_avg_pool(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    if value(node.args[0]).dim() != 4:
        return "not 2-D pooling"
    if any(p != 0 for p in arg(node, 3, "padding", [0, 0])):
        return "padded average pooling (divisor semantics differ)"
    if arg(node, 4, "ceil_mode", False) and not _ceil_is_floor(node):
        return "ceil_mode changes the output size"
    if arg(node, 6, "divisor_override") is not None:
        return "divisor_override"
    return None


@register("aten.avg_pool2d.default", check=check_avg_pool, layout=SPATIAL)
def lower_avg_pool(b, node: torch.fx.Node) -> None:
    window = _window(node.args[1], arg(node, 2, "stride", []), [0, 0], [1, 1])
    b.g.add("AveragePooling2d", [b.operand(node.args[0])], b.out(node), node, **window)


def check_adaptive_avg_pool(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    x = value(node.args[0])
    oh, ow = node.args[1]
    if x.dim() != 4:
        return "not 2-D pooling"
    if (oh, ow) != (1, 1) and (x.shape[2] % oh or x.shape[3] % ow):
        return "output size does not divide the input"
    return None


@register("aten._adaptive_avg_pool2d.default", check=check_adaptive_avg_pool, layout=SPATIAL)
def lower_adaptive_avg_pool(b, node: torch.fx.Node) -> None:
    x = value(node.args[0])
    oh, ow = node.args[1]
    if (oh, ow) == (1, 1):
        b.g.add("GlobalAveragePooling2d", [b.operand(node.args[0])], b.out(node), node)
        return
    kh, kw = x.shape[2] // oh, x.shape[3] // ow
    b.g.add("AveragePooling2d", [b.operand(node.args[0])], b.out(node), node,
            padding=[0, 0, 0, 0], pooling=[kh, kw], stride=[kh, kw], dilation=[1, 1])


def check_mean(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    x = value(node.args[0])
    dims = arg(node, 1, "dim")
    if x.dim() != 4 or dims is None or {d % 4 for d in dims} != {2, 3}:
        return "mean over other dims than H, W"
    if node.kwargs.get("dtype") is not None:
        return "mean with dtype"
    return None


@register("aten.mean.dim", check=check_mean, layout=SPATIAL)
def lower_mean(b, node: torch.fx.Node) -> None:
    x = value(node.args[0])
    if arg(node, 2, "keepdim", False):
        b.g.add("GlobalAveragePooling2d", [b.operand(node.args[0])], b.out(node), node)
        return
    pooled = b.g.value([x.shape[0], 1, 1, x.shape[1]])
    b.g.add("GlobalAveragePooling2d", [b.operand(node.args[0])], pooled, node)
    out = b.out(node)
    b.g.add("StaticReshape", [pooled], out, node, new_shape=b.g.values[out][0])


def check_upsample(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    x, out = value(node.args[0]), value(node)
    if x.dim() != 4:
        return "not 2-D"
    scales = arg(node, 3, "scale_factors")
    if scales is not None:
        for d, s in enumerate(scales):
            if out.shape[2 + d] != x.shape[2 + d] * s:
                return "scale factors that do not give whole sizes"
    return None


@register("aten.upsample_bilinear2d.vec", check=check_upsample, layout=SPATIAL)
def lower_upsample(b, node: torch.fx.Node) -> None:
    out_shape = value(node).shape
    align = bool(arg(node, 2, "align_corners", False))
    b.g.add("StaticResizeBilinear2d", [b.operand(node.args[0])], b.out(node), node,
            pooling=[int(out_shape[2]), int(out_shape[3])],
            flags=_ALIGN_CORNERS if align else 0)
