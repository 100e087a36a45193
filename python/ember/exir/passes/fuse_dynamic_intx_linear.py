"""Fuse torchao's 8da4w / 8da8w linear layers into one integer op.

torchao's ``Int8DynamicActivationIntxWeightConfig`` (int8 activations
quantized per token at run time, symmetric int4 or int8 weights per group or
per channel) exports, after decomposition, to

- the activation's parameters: ``scale = clamp((max(amax(x), 0) - min(amin(x),
  0)) / 255, FLT_MIN)``, ``zp = int8(clamp(-128 - round(min(amin(x), 0) /
  scale), -128, 127))`` (``choose_qparams_affine``, ASYMMETRIC, one block per
  row);
- ``q = int8(clamp(round(x * (reciprocal(scale) * 1)) + zp, -128, 127))``, and
  its dequantization ``(float(q) - float(zp)) * scale``;
- ``addmm|mm(bias, that, permute((float(w) - float(wzp)) * wscale))`` per group
  of K (the weight part of ``fuse_weight_only_linear``).

Every piece is matched (constants 255, -128, 1 and the [-128, 127] clamps,
the same ``x`` in every reduction and in the quantization, reductions over
its last dimension, weight zero points all 0), and the whole becomes
``ember_quantized.linear_dynamic_intx(x, weight, scales, group_size, bits,
bias)``, whose kernel quantizes each row and sums int8 × int4/int8 products in
int32 (``kernels/quantized/op_quantized_linear_dynamic_intx.cpp``). Weights
whose values all lie in [-8, 7] are stored two per byte (``weight_bits`` 4).
Runs before ``fuse_weight_only_linear``, which would otherwise take the
weight half alone.
"""

from __future__ import annotations

from typing import Any

import torch

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator import ember_quantized
from ember.exir.passes.fuse_quantized_ops import FuseQuantizedOpsPass
from ember.exir.passes.fuse_weight_only_linear import FuseWeightOnlyLinearPass

aten = torch.ops.aten
_TINY = torch.finfo(torch.float32).tiny


def _strip(node: Any) -> Any:
    while calls_op(node, aten.view_copy.default):
        node = node.args[0]
    return node


def _cast(node: Any, dtype: torch.dtype) -> Any:
    """``x`` behind ``_to_copy(x, dtype=dtype)`` (views stripped), else None."""
    node = _strip(node)
    if calls_op(node, aten._to_copy.default) and node.kwargs.get("dtype") == dtype:
        return _strip(node.args[0])
    return None


def _clamp(node: Any, lo: Any, hi: Any) -> Any:
    """``x`` behind ``clamp(x, lo, hi)`` (None: that bound absent), else None."""
    if not calls_op(node, aten.clamp.default):
        return None
    args = list(node.args) + [None] * (3 - len(node.args))
    got_lo = node.kwargs.get("min", args[1])
    got_hi = node.kwargs.get("max", args[2])
    if got_lo != lo or got_hi != hi:
        return None
    return _strip(node.args[0])


class FuseDynamicIntxLinearPass(FuseWeightOnlyLinearPass):
    """``FuseDynamicIntxLinearPass()(ep)`` returns the program with every
    8da4w / 8da8w linear fused (``ep`` is not changed); ``fused`` counts them.
    The weight half is matched as the weight-only pass matches it."""

    def _fuse_node(self, inputs: LiftedConstants, node: torch.fx.Node) -> bool:
        if calls_op(node, aten.addmm.default) or calls_op(node, aten.mm.default):
            return self._fuse(inputs, node)
        return False

    # -- the activation ------------------------------------------------------

    @staticmethod
    def _scalar(inputs: LiftedConstants, node: Any) -> float | None:
        if isinstance(node, (int, float)):
            return float(node)
        value = inputs.value(node) if isinstance(node, torch.fx.Node) else None
        if value is None or value.numel() != 1:
            return None
        return float(value.reshape(()).item())

    @staticmethod
    def _reduced(node: Any, op: Any, x_dims: dict) -> Any:
        """``x`` behind ``minimum|maximum(amin|amax(x, [-1]), full_like(.., 0))``."""
        if not calls_op(node, op):
            return None
        red, zeros = node.args[:2]
        if not (calls_op(zeros, aten.full_like.default) and zeros.args[1] == 0):
            return None
        want = aten.amin.default if op == aten.minimum.default else aten.amax.default
        if not calls_op(red, want) or red.kwargs.get("keepdim", False) or (
                len(red.args) > 2 and red.args[2]):
            return None
        x = _strip(red.args[0])
        dims = list(red.args[1]) if len(red.args) > 1 else []
        rank = red.args[0].meta["val"].dim()
        if len(dims) != 1 or dims[0] % rank != rank - 1:
            return None
        x_dims[x] = red.args[0].meta["val"].shape[-1]
        return x

    def _scale(self, inputs: LiftedConstants, node: Any, x_dims: dict):
        """(x, min node) when ``node`` is the per-token scale of ``x``."""
        div = _clamp(node, _TINY, None)
        if not calls_op(div, aten.div.Tensor) or self._scalar(inputs, div.args[1]) != 255.0:
            return None
        sub = div.args[0]
        if not calls_op(sub, aten.sub.Tensor):
            return None
        x_hi = self._reduced(sub.args[0], aten.maximum.default, x_dims)
        x_lo = self._reduced(sub.args[1], aten.minimum.default, x_dims)
        if x_hi is None or x_hi is not x_lo:
            return None
        return x_hi, sub.args[1]

    def _zero_point(self, inputs: LiftedConstants, node: Any, scale: Any, low: Any) -> bool:
        """``node`` is int8(clamp(-128 - round(low / scale), -128, 127))."""
        sub = _clamp(node, -128, 127)
        if not calls_op(sub, aten.sub.Tensor) or self._scalar(inputs, sub.args[0]) != -128.0:
            return False
        rnd = sub.args[1]
        if not calls_op(rnd, aten.round.default):
            return False
        div = rnd.args[0]
        return (calls_op(div, aten.div.Tensor) and div.args[0] is low
                and _strip(div.args[1]) is scale)

    def _token_quantized(self, inputs: LiftedConstants, node: Any) -> Any:
        """The float ``x`` when ``node`` is torchao's per-token int8
        quantize-dequantize of it (ASYMMETRIC, [-128, 127]), else None."""
        mul = _strip(node)
        if not calls_op(mul, aten.mul.Tensor):
            return None
        for q_part, s_part in (mul.args, mul.args[::-1]):
            scale = _strip(s_part)
            if not calls_op(q_part := _strip(q_part), aten.sub.Tensor):
                continue
            q = _cast(q_part.args[0], torch.float32)
            zp = _cast(q_part.args[1], torch.float32)
            q = _cast(q, torch.int8) if q is not None else None
            zp_src = _cast(zp, torch.int8) if zp is not None else None
            if q is None or zp_src is None:
                continue
            x_dims: dict = {}
            found = self._scale(inputs, scale, x_dims)
            if found is None:
                continue
            x, low = found
            if not self._zero_point(inputs, zp_src, scale, low):
                continue
            # q = clamp(round(x * (reciprocal(scale) * 1)) + zp, -128, 127)
            add = _clamp(q, -128, 127)
            if not calls_op(add, aten.add.Tensor) or _strip(add.args[1]) is not zp:
                continue
            rnd = add.args[0]
            if not calls_op(rnd, aten.round.default) or not calls_op(rnd.args[0], aten.mul.Tensor):
                continue
            xs, inv = rnd.args[0].args
            if _strip(xs) is not x or not calls_op(inv, aten.mul.Tensor):
                continue
            recip, one = inv.args
            if self._scalar(inputs, one) != 1.0 or not calls_op(recip, aten.reciprocal.default):
                continue
            if _strip(recip.args[0]) is not scale:
                continue
            if xs.meta["val"].shape[-1] != x_dims[x] or x.meta["val"].dtype != torch.float32:
                continue
            return x
        return None

    # -- the linear ----------------------------------------------------------

    def _fuse(self, inputs: LiftedConstants, mm: torch.fx.Node) -> bool:
        if calls_op(mm, aten.addmm.default):
            if mm.kwargs.get("beta", 1) != 1 or mm.kwargs.get("alpha", 1) != 1:
                return False
            b, xq, wt = mm.args[:3]
        else:
            b = None
            xq, wt = mm.args[:2]
        if not (calls_op(wt, aten.permute_copy.default) and list(wt.args[1]) == [1, 0]):
            return False
        x = self._token_quantized(inputs, xq)
        if x is None:
            return False
        parts = self._affine_weight(inputs, wt.args[0])
        if parts is None:
            return False
        w, scales, zeros = parts
        if zeros is not None and bool(zeros.ne(0).any()):
            return False
        bias = None
        if b is not None:
            bias = self._constant_behind(inputs, b)
            if bias is None or bias.dim() != 1:
                return False
        k = w.shape[1]
        group = k // scales.shape[1]
        bits = 4 if k % 2 == 0 and int(w.min()) >= -8 and int(w.max()) <= 7 else 8
        packed = ember_quantized.pack_int4(w) if bits == 4 else w
        graph = inputs.gm.graph
        # The input keeps mm's row layout: a view of x as mm's operand was.
        if calls_op(xq, aten.view_copy.default):
            with graph.inserting_before(mm):
                x_in = graph.call_function(to_edge_op(aten.view_copy.default),
                                           (x, xq.args[1]))
            x_in.meta = dict(xq.meta)
        else:
            x_in = x
        wn = inputs.add(packed.contiguous(), "intx_weight")
        sn = inputs.add(scales, "intx_scales")
        bn = inputs.add(bias.to(torch.float32).contiguous(), "intx_bias") if bias is not None \
            else None
        FuseQuantizedOpsPass.replace_node(
            graph, mm, ember_quantized.ops.linear_dynamic_intx.default,
            (x_in, wn, sn, int(group), bits, bn))
        return True
