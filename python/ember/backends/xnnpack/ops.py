"""What XNNPACK (Debian's 2022 build) can run, decided per edge node.

``refusal(node, constant)`` returns why XNNPACK cannot run ``node`` (a short
phrase) or None. ``constant(n)`` says whether a node's value is known ahead
of time (a parameter, a buffer, or computed only from such), which the
partitioner works out. The rules mirror what ``preprocess`` lowers; the
partitioner never claims a node the lowering would refuse.

Inside a delegate every rank-4 value is NHWC, so ops whose meaning depends
on the layout are claimed on rank-4 values only when they have an NHWC form.
This XNNPACK has no transpose, concatenation, batch matmul, tanh, GELU or
layer norm: those stay on the portable kernels.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch

from ember.exir.dialects.edge._ops import EdgeOpOverload

Constant = Callable[[Any], bool]


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


def static_shape(t: torch.Tensor) -> bool:
    return all(isinstance(d, int) for d in t.shape)


def layout_trivial(shape: tuple[int, ...]) -> bool:
    """A rank-4 value whose NCHW and NHWC memory orders coincide."""
    return len(shape) != 4 or shape[1] == 1 or shape[2] * shape[3] == 1


def arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


_BINARY = {
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
_UNARY = {
    "aten.sigmoid.default": "Sigmoid",
    "aten.hardswish.default": "Hardswish",
    "aten.abs.default": "Abs",
    "aten.neg.default": "Negate",
    "aten.floor.default": "Floor",
    "aten.ceil.default": "Ceiling",
    "aten.sqrt.default": "SquareRoot",
}
_CLAMPS = ("aten.relu.default", "aten.hardtanh.default", "aten.clamp.default")

BINARY, UNARY, CLAMPS = _BINARY, _UNARY, _CLAMPS


def _float_tensor(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and v.dtype == torch.float32 and static_shape(v)


def _tensor_args(node: torch.fx.Node) -> list[torch.fx.Node]:
    return [a for a in node.all_input_nodes if isinstance(value(a), torch.Tensor)]


def _only_first_output_used(node: torch.fx.Node) -> bool:
    return all(u.target is operator.getitem and u.args[1] == 0 for u in node.users)


def refusal(node: torch.fx.Node, constant: Constant, nhwc: bool = True) -> str | None:
    """Why XNNPACK cannot run ``node``, or None when it can, in a delegate
    whose rank-4 values are NHWC (``nhwc``) or kept as the program has them."""
    name = op_name(node)
    out = value(node)
    if isinstance(out, (tuple, list)):
        out = out[0] if out else None
    if not _float_tensor(out):
        return "not a static float32 result"
    if not 1 <= out.dim() <= 6:
        return f"rank {out.dim()} result"
    for a in _tensor_args(node):
        v = value(a)
        if not _float_tensor(v):
            return f"input {a.name} is not static float32"
        if v.dim() == 0 and not constant(a):
            return "a rank-0 input"
    check = _RULES.get(name)
    if check is None:
        return "no XNNPACK operator"
    if name in SPATIAL and not nhwc:
        return "needs XNNPACK's NHWC layout"
    return check(node, constant, nhwc)


def _binary(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    name = op_name(node)
    if name.startswith(("aten.add", "aten.sub")) and arg(node, 2, "alpha", 1) != 1:
        return "alpha != 1"
    out = value(node)
    if nhwc and out.dim() == 4:
        for a in node.args[:2]:
            v = value(a)
            if isinstance(a, torch.fx.Node) and not constant(a) and v.dim() != 4 and v.numel() != 1:
                return "a rank-4 result from a lower-rank activation (layouts differ)"
    return None


def _clamp(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    name = op_name(node)
    if name == "aten.hardtanh.default":
        lo, hi = arg(node, 1, "min_val", -1.0), arg(node, 2, "max_val", 1.0)
    elif name == "aten.clamp.default":
        lo, hi = arg(node, 1, "min"), arg(node, 2, "max")
    else:
        return None
    for bound in (lo, hi):
        if bound is not None and not isinstance(bound, (int, float)):
            return "tensor clamp bounds"
    if lo is not None and hi is not None and lo > hi:
        return "min > max"
    return None


def _conv(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    x, w, b = node.args[0], node.args[1], node.args[2]
    stride, padding, dilation, transposed = node.args[3], node.args[4], node.args[5], node.args[6]
    if value(x).dim() != 4:
        return "not a 2-D convolution"
    if transposed:
        return "transposed convolution"
    if not constant(w) or (b is not None and not constant(b)):
        return "weights or bias computed at run time"
    if len(stride) != 2 or len(padding) != 2 or len(dilation) != 2:
        return "stride/padding/dilation not 2-D"
    return None


def _batch_norm(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    x = node.args[0]
    if not 2 <= value(x).dim() <= 4:
        return "batch norm on rank < 2"
    if not all(a is None or constant(a) for a in node.args[1:5]):
        return "batch norm statistics computed at run time"
    if not _only_first_output_used(node):
        return "batch norm's saved statistics are used"
    return None


def _addmm(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    bias, x, w = node.args[0], node.args[1], node.args[2]
    if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
        return "beta or alpha != 1"
    if not constant(w) or not constant(bias):
        return "weight or bias computed at run time"
    n = value(w).shape[1]
    if value(bias).numel() != n or value(bias).shape[-1] != n:
        return "bias is not one value per output"
    return None if value(x).dim() == 2 else "not a matrix"


def _mm(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    return None if constant(node.args[1]) else "both operands computed at run time"


def _linear(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    w, b = node.args[1], arg(node, 2, "bias")
    if not constant(w) or (b is not None and not constant(b)):
        return "weight or bias computed at run time"
    return None


def _max_pool(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    if value(node.args[0]).dim() != 4:
        return "not 2-D pooling"
    if not _only_first_output_used(node):
        return "pooling indices are used"
    if arg(node, 5, "ceil_mode", False) and not _ceil_is_floor(node):
        return "ceil_mode changes the output size"
    return None


def _ceil_is_floor(node: torch.fx.Node) -> bool:
    """True when ceil_mode gives the same output size as floor mode."""
    x = value(node.args[0])
    kernel = list(node.args[1])
    stride = list(arg(node, 2, "stride", []) or kernel)
    padding = list(arg(node, 3, "padding", [0, 0]))
    dilation = list(arg(node, 4, "dilation", [1, 1]))
    if len(padding) == 1:
        padding = padding * 2
    if len(dilation) == 1:
        dilation = dilation * 2
    if len(stride) == 1:
        stride = stride * 2
    for d in range(2):
        span = x.shape[2 + d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1
        if span % stride[d] != 0:
            return False
    return True


def _avg_pool(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    if value(node.args[0]).dim() != 4:
        return "not 2-D pooling"
    padding = arg(node, 3, "padding", [0, 0])
    if any(p != 0 for p in padding):
        return "padded average pooling (divisor semantics differ)"
    if arg(node, 4, "ceil_mode", False) and not _ceil_is_floor(node):
        return "ceil_mode changes the output size"
    if arg(node, 6, "divisor_override") is not None:
        return "divisor_override"
    return None


def _adaptive_avg_pool(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    x = value(node.args[0])
    oh, ow = node.args[1]
    if x.dim() != 4:
        return "not 2-D pooling"
    if (oh, ow) != (1, 1) and (x.shape[2] % oh or x.shape[3] % ow):
        return "output size does not divide the input"
    return None


def _mean(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    x = value(node.args[0])
    dims = arg(node, 1, "dim")
    if x.dim() != 4 or dims is None or {d % 4 for d in dims} != {2, 3}:
        return "mean over other dims than H, W"
    if node.kwargs.get("dtype") is not None:
        return "mean with dtype"
    return None


def _softmax(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    x = value(node.args[0])
    dim = node.args[1] % x.dim()
    if node.args[2]:
        return "half_to_float"
    if nhwc and ((x.dim() < 4 and dim == x.dim() - 1) or (x.dim() == 4 and dim == 1)):
        return None
    if not nhwc and dim == x.dim() - 1:
        return None
    return "softmax over a dim that is not innermost in XNNPACK's layout"


def _pad(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    if any(p < 0 for p in node.args[1]):
        return "negative padding"
    return None


def _view(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    src, out = value(node.args[0]), value(node)
    if nhwc and not (layout_trivial(tuple(src.shape)) and layout_trivial(tuple(out.shape))):
        return "reshape of a rank-4 value whose NHWC order differs"
    return None


def _upsample(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    x, out = value(node.args[0]), value(node)
    if x.dim() != 4:
        return "not 2-D"
    scales = arg(node, 3, "scale_factors")
    if scales is not None:
        for d, s in enumerate(scales):
            if out.shape[2 + d] != x.shape[2 + d] * s:
                return "scale factors that do not give whole sizes"
    return None


def _elu(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    if arg(node, 2, "scale", 1) != 1 or arg(node, 3, "input_scale", 1) != 1:
        return "scaled ELU"
    return None


def _clone(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    fmt = node.kwargs.get("memory_format")
    if fmt not in (None, torch.preserve_format, torch.contiguous_format):
        return "clone into another memory format"
    return None


def _always(node: torch.fx.Node, constant: Constant, nhwc: bool) -> str | None:
    return None


# Ops that only exist in NHWC form: their rank-4 values make a delegate NHWC.
SPATIAL = {
    "aten.convolution.default",
    "aten.max_pool2d_with_indices.default",
    "aten.avg_pool2d.default",
    "aten._adaptive_avg_pool2d.default",
    "aten.mean.dim",
    "aten.upsample_bilinear2d.vec",
}
# Ops that run in either layout: their rank-4 values share one layout.
LAYOUT_FREE = set(_BINARY) | set(_UNARY) | set(_CLAMPS) | {
    "aten.elu.default",
    "aten.leaky_relu.default",
    "aten._native_batch_norm_legit_no_training.default",
    "aten.constant_pad_nd.default",
    "aten.clone.default",
    "getitem",
}

_RULES: dict[str, Callable[[torch.fx.Node, Constant, bool], str | None]] = {
    **{name: _binary for name in _BINARY},
    **{name: _always for name in _UNARY},
    **{name: _clamp for name in _CLAMPS},
    "aten.convolution.default": _conv,
    "aten._native_batch_norm_legit_no_training.default": _batch_norm,
    "aten.addmm.default": _addmm,
    "aten.mm.default": _mm,
    "aten.linear.default": _linear,
    "aten.max_pool2d_with_indices.default": _max_pool,
    "aten.avg_pool2d.default": _avg_pool,
    "aten._adaptive_avg_pool2d.default": _adaptive_avg_pool,
    "aten.mean.dim": _mean,
    "aten._softmax.default": _softmax,
    "aten.constant_pad_nd.default": _pad,
    "aten.view_copy.default": _view,
    "aten.upsample_bilinear2d.vec": _upsample,
    "aten.elu.default": _elu,
    "aten.leaky_relu.default": _always,
    "aten.clone.default": _clone,
}
