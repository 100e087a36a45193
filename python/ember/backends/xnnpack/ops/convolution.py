"""2-D convolution (any groups, dilation; constant weights and bias) and
batch norm, folded into the convolution it follows or lowered as a
multiply and an add."""

from __future__ import annotations

import torch

from ember.backends.xnnpack.node_info import only_first_output_used, value
from ember.backends.xnnpack.ops.registry import FREE, SPATIAL, CheckContext, register


def check_convolution(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    x, w, b = node.args[0], node.args[1], node.args[2]
    stride, padding, dilation, transposed = node.args[3], node.args[4], node.args[5], node.args[6]
    if value(x).dim() != 4:
        return "not a 2-D convolution"
    if transposed:
        return "transposed convolution"
    if not ctx.constant(w) or (b is not None and not ctx.constant(b)):
        return "weights or bias computed at run time"
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2:
        return "stride/padding/dilation not 2-D"
    return None


@register("aten.convolution.default", check=check_convolution, layout=SPATIAL)
def lower_convolution(b, node: torch.fx.Node) -> None:
    x, w, bias_node, stride, padding, dilation, _, _, groups = node.args[:9]
    weight = b.known(w)
    bias = b.known(bias_node) if bias_node is not None else torch.zeros(weight.shape[0])
    ph, pw = padding
    b.g.add(
        "Convolution2d",
        [b.operand(x), b.g.constant(weight.permute(0, 2, 3, 1)), b.g.constant(bias)],
        b.out(node),
        node,
        padding=[ph, pw, ph, pw],
        pooling=list(weight.shape[2:]),
        stride=list(stride),
        dilation=list(dilation),
        groups=int(groups),
    )


def check_batch_norm(node: torch.fx.Node, ctx: CheckContext) -> str | None:
    if not 2 <= value(node.args[0]).dim() <= 4:
        return "batch norm on rank < 2"
    if not all(a is None or ctx.constant(a) for a in node.args[1:5]):
        return "batch norm statistics computed at run time"
    if not only_first_output_used(node):
        return "batch norm's saved statistics are used"
    return None


@register("aten._native_batch_norm_legit_no_training.default", check=check_batch_norm,
          layout=FREE)
def lower_batch_norm(b, node: torch.fx.Node) -> None:
    x, w, bias, mean, var = node.args[:5]
    eps = node.args[6] if len(node.args) > 6 else node.kwargs.get("eps", 1e-5)
    mean_t, var_t = b.known(mean).double(), b.known(var).double()
    scale = torch.rsqrt(var_t + eps)
    if w is not None:
        scale = scale * b.known(w).double()
    shift = -mean_t * scale
    if bias is not None:
        shift = shift + b.known(bias).double()
    g = b.g
    xv = g.of.get(x)
    conv = g.producer.get(xv) if xv is not None else None
    if (
        conv is not None
        and conv.kind == "Convolution2d"
        and len(x.users) == 1
        and not any(xv == i for i, _ in g.outputs)
    ):
        # Fold into the convolution: W' = W * scale[o], b' = b * scale + shift.
        fi, bi = conv.inputs[1], conv.inputs[2]
        filt = g.constants[g.values[fi][1]].double()
        conv_bias = g.constants[g.values[bi][1]].double()
        g.constants[g.values[fi][1]] = (filt * scale.reshape(-1, 1, 1, 1)).float()
        g.constants[g.values[bi][1]] = (conv_bias * scale + shift).float()
        g.of[node] = xv
        return
    rank = value(x).dim()
    shape = [1, -1] + [1] * (rank - 2)
    scaled = g.value(b.dims(tuple(value(x).shape)))
    g.add("Multiply", [b.operand(x), b.operand(scale.float().reshape(shape), rank)], scaled, node)
    g.add("Add", [scaled, b.operand(shift.float().reshape(shape), rank)], b.out(node), node)
