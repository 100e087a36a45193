"""Fuse pt2e's dequantize → linear/convolution → quantize chains into integer ops.

pt2e's converted models compute every quantized layer in float between a
``dequantize`` of its int8 input and weight and a ``quantize`` of its
output. This pass rewrites the chains Ember's integer kernels handle into
``ember_quantized`` ops (``ember.exir.operator.ember_quantized``), which
read the int8 tensors directly and keep the weight int8 in the program:

- static: ``quantize([relu|hardtanh](addmm|mm|convolution(dequantize(xq),
  dequantize(w), bias)))`` → ``ember_quantized.linear`` / ``conv2d`` on
  ``xq``, requantised to the quantize's parameters; relu and hardtanh become
  the output's clamp range (exact: rounding is monotone). A linear over more
  than two dimensions (``view → addmm → view``) is fused whole.
- static add (a residual connection) and mul (a squeeze-and-excitation
  gate): ``quantize([relu](add|mul(dequantize(a), dequantize(b))))``, a and b
  broadcasting → ``ember_quantized.add`` / ``mul``.
- dynamic: ``addmm|mm(bias, dequantize(quantize(x, choose_qparams(x))),
  dequantize(w))`` → ``ember_quantized.linear_dynamic(x, ...)``.
- zero padding, max pooling and concatenation between dequantizes and a
  quantize of the same parameters run on the int8 tensors themselves (exact).

Only what the kernels compute the same way is fused: int8 activations with
[-128, 127], symmetric int8 weights (every zero point 0) per tensor or per
output channel that are program constants, 2-d convolutions that are not
transposed, a constant bias (an int32 bias is dequantized here, as eager
would). Everything else stays as it is and runs as before.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.exported import copy_graph_module
from ember.exir.lifted_constants import LiftedConstants
from ember.exir.operator import ember_quantized

aten = torch.ops.aten
qd = torch.ops.quantized_decomposed

_Q = qd.quantize_per_tensor.default
_DQ = qd.dequantize_per_tensor.default
_DQ_CHANNEL = qd.dequantize_per_channel.default
_Q_T = qd.quantize_per_tensor.tensor
_DQ_T = qd.dequantize_per_tensor.tensor
_CHOOSE = qd.choose_qparams.tensor


@dataclass
class _Weight:
    int8: torch.Tensor     # [N, ...]
    scales: torch.Tensor   # float32 [N]


def _single_user(node: torch.fx.Node) -> bool:
    return len(node.users) == 1


class FuseQuantizedOpsPass:
    """``FuseQuantizedOpsPass()(ep)`` returns the program with every fusable
    chain fused (``ep`` is not changed); ``fused`` counts them by kind."""

    def __init__(self) -> None:
        self.fused: dict[str, int] = {}

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        inputs = LiftedConstants(ep, copy_graph_module(ep.graph_module))
        self.fused = {}
        for node in list(inputs.gm.graph.nodes):
            if node.graph is None:
                continue  # erased by an earlier rewrite
            kind = None
            if calls_op(node, _Q):
                kind = self._fuse_static(inputs, node)
            elif calls_op(node, aten.addmm.default) or calls_op(node, aten.mm.default):
                kind = self._fuse_dynamic(inputs, node)
            if kind is not None:
                self.fused[kind] = self.fused.get(kind, 0) + 1
        if not self.fused:
            return ep
        self.remove_dead(inputs.gm.graph)
        inputs.remove_unused()
        return inputs.program()

    # -- pieces ---------------------------------------------------------------

    @staticmethod
    def remove_dead(graph: torch.fx.Graph) -> None:
        """Erases ATen and quantized_decomposed calls nothing reads (never a mutating op)."""
        changed = True
        while changed:
            changed = False
            for node in reversed(list(graph.nodes)):
                if node.op == "call_function" and not node.users and node.target is not None:
                    target = getattr(node.target, "op", node.target)
                    schema = getattr(target, "_schema", None)
                    if schema is not None and schema.is_mutable:
                        continue
                    if target is operator.getitem or getattr(target, "namespace", "") in (
                        "aten", "quantized_decomposed"
                    ):
                        graph.erase_node(node)
                        changed = True

    @staticmethod
    def _weight(inputs: LiftedConstants, node: Any, dims: int) -> _Weight | None:
        """The int8 weight and per-channel scales behind ``dequantize(w)``."""
        if calls_op(node, _DQ_CHANNEL):
            w, scales, zps, axis, _qmin, _qmax, dtype = node.args[:7]
            if axis != 0 or dtype != torch.int8 or not isinstance(w, torch.fx.Node):
                return None
            wv = inputs.value(w)
            sv = inputs.value(scales) if isinstance(scales, torch.fx.Node) else None
            zv = inputs.value(zps) if isinstance(zps, torch.fx.Node) else None
            if wv is None or sv is None or (zps is not None and zv is None):
                return None
            if zv is not None and bool((zv != 0).any()):
                return None
            scales_f = sv.to(torch.float32).reshape(-1)
        elif calls_op(node, _DQ):
            w, scale, zp, _qmin, _qmax, dtype = node.args[:6]
            if dtype != torch.int8 or zp != 0 or not isinstance(w, torch.fx.Node):
                return None
            wv = inputs.value(w)
            if wv is None:
                return None
            scales_f = torch.full((wv.shape[0],), float(scale), dtype=torch.float32)
        else:
            return None
        if wv.dtype != torch.int8 or wv.dim() != dims or scales_f.numel() != wv.shape[0]:
            return None
        return _Weight(wv.contiguous(), scales_f.contiguous())

    @staticmethod
    def _bias(inputs: LiftedConstants, node: Any) -> tuple[bool, torch.Tensor | None]:
        """(ok, float32 bias or None) for a bias argument."""
        if node is None:
            return True, None
        if not isinstance(node, torch.fx.Node):
            return False, None
        value = inputs.value(node)
        if value is None and node.op == "call_function" and (
            calls_op(node, _DQ_CHANNEL) or calls_op(node, _DQ)
        ):
            args = [inputs.value(a) if isinstance(a, torch.fx.Node) else a for a in node.args]
            if any(a is None for a, orig in zip(args, node.args, strict=True)
                   if isinstance(orig, torch.fx.Node)):
                return False, None
            op = getattr(node.target, "op", node.target)
            value = op(*args, **node.kwargs)
        if value is None or not value.is_floating_point() or value.dim() != 1:
            return False, None
        return True, value.to(torch.float32).contiguous()

    @staticmethod
    def _int8_input(node: Any) -> tuple[torch.fx.Node, float, int] | None:
        """(xq, scale, zero point) behind ``dequantize_per_tensor(xq, ...)``."""
        if not calls_op(node, _DQ):
            return None
        xq, scale, zp, qmin, qmax, dtype = node.args[:6]
        if dtype != torch.int8 or (qmin, qmax) != (-128, 127) or not isinstance(xq, torch.fx.Node):
            return None
        val = xq.meta.get("val")
        if val is None or val.dtype != torch.int8:
            return None
        return xq, float(scale), int(zp)

    @staticmethod
    def _flattened_linear_input(node: Any) -> Any:
        """``x`` behind ``view_copy(x, [-1, K])`` that only merges leading dims."""
        if not calls_op(node, aten.view_copy.default):
            return node
        src = node.args[0]
        src_val, val = getattr(src, "meta", {}).get("val"), node.meta.get("val")
        if src_val is None or val is None or val.dim() != 2 or src_val.dim() < 2:
            return node
        if src_val.shape[-1] != val.shape[-1]:
            return node
        return src

    @staticmethod
    def _clamp_range(act: torch.fx.Node | None, scale: float, zp: int, qmin: int,
                     qmax: int) -> tuple[int, int] | None:
        if act is None:
            return qmin, qmax
        if calls_op(act, aten.relu.default):
            return max(qmin, zp), qmax
        if calls_op(act, aten.hardtanh.default):
            lo_f = act.args[1] if len(act.args) > 1 else act.kwargs.get("min_val", -1.0)
            hi_f = act.args[2] if len(act.args) > 2 else act.kwargs.get("max_val", 1.0)
            inv = torch.tensor(1.0 / scale, dtype=torch.float32)

            def q(v: float) -> int:
                return int(torch.round(torch.tensor(v, dtype=torch.float32) * inv)) + zp

            return max(qmin, q(lo_f)), min(qmax, q(hi_f))
        return None

    def _fuse_static(self, inputs: LiftedConstants, quant: torch.fx.Node) -> str | None:
        x_float, scale_y, zp_y, qmin, qmax, dtype = quant.args[:6]
        if dtype != torch.int8 or not isinstance(x_float, torch.fx.Node):
            return None
        folded = self._fold_activation(quant) or self._on_int8(quant)
        if folded is not None:
            return folded
        chain = [x_float]
        act = None
        if calls_op(x_float, aten.relu.default) or calls_op(x_float, aten.hardtanh.default):
            act = x_float
            x_float = x_float.args[0]
            chain.append(x_float)
        if not isinstance(x_float, torch.fx.Node):
            return None
        out_view = None
        if calls_op(x_float, aten.view_copy.default):
            out_view = x_float
            x_float = x_float.args[0]
            chain.append(x_float)
        if not all(_single_user(n) for n in chain if isinstance(n, torch.fx.Node)):
            return None
        rng = self._clamp_range(act, float(scale_y), int(zp_y), int(qmin), int(qmax))
        if rng is None:
            return None
        graph = inputs.gm.graph
        if out_view is None:
            for op, fused in ((aten.add.Tensor, ember_quantized.ops.add.default),
                              (aten.mul.Tensor, ember_quantized.ops.mul.default)):
                if calls_op(x_float, op):
                    return self._fuse_binary(graph, quant, x_float, rng, fused)
        if calls_op(x_float, aten.convolution.default) and out_view is None:
            x_dq, w_dq, b, stride, padding, dilation, transposed, _out_pad, groups = x_float.args
            if transposed or len(stride) != 2:
                return None
            src = self._int8_input(x_dq)
            weight = self._weight(inputs, w_dq, 4)
            ok, bias = self._bias(inputs, b)
            if src is None or weight is None or not ok:
                return None
            xq, s_x, zp_x = src
            padding = list(padding)
            unpadded = self._unpadded(xq, zp_x)
            if unpadded is not None:
                xq, (top, left, bottom, right) = unpadded
                ph, pw = padding
                padding = [ph + top, pw + left, ph + bottom, pw + right]
                if padding[:2] == padding[2:]:
                    padding = padding[:2]
            args = (xq, s_x, zp_x) + self._constants(inputs, weight, bias, "qconv") + (
                list(stride), padding, list(dilation), int(groups),
                float(scale_y), int(zp_y), rng[0], rng[1])
            self.replace_node(graph, quant, ember_quantized.ops.conv2d.default, args)
            return "conv2d"
        linear = self._linear_parts(inputs, x_float)
        if linear is None:
            return None
        x_dq, weight, bias = linear
        x_src = self._flattened_linear_input(x_dq)
        if x_src is not x_dq:
            if out_view is None:
                return None
            x_dq = x_src
        elif out_view is not None:
            return None
        src = self._int8_input(x_dq)
        if src is None:
            return None
        xq, s_x, zp_x = src
        args = (xq, s_x, zp_x) + self._constants(inputs, weight, bias, "qlinear") + (
            float(scale_y), int(zp_y), rng[0], rng[1])
        self.replace_node(graph, quant, ember_quantized.ops.linear.default, args)
        return "linear"

    @staticmethod
    def _unpadded(xq: torch.fx.Node, zp_x: int) -> tuple[torch.fx.Node, list[int]] | None:
        """``(t, [top, left, bottom, right])`` when ``xq`` is ``t`` zero-padded
        in its last two dimensions: ``quantize(constant_pad_nd(dequantize(t),
        pads, 0))`` with ``t``'s parameters, or an int8 ``constant_pad_nd(t,
        pads, zero point)``. The padding is the zero point, which is what a
        convolution's own padding reads, so the convolution pads ``t`` itself
        (TF-style models pad before every convolution)."""
        if calls_op(xq, _Q):
            pad = xq.args[0]
            if not calls_op(pad, aten.constant_pad_nd.default):
                return None
            value = pad.args[2] if len(pad.args) > 2 else pad.kwargs.get("value", 0)
            dq = pad.args[0]
            if value != 0 or not calls_op(dq, _DQ) or tuple(dq.args[1:6]) != tuple(xq.args[1:6]):
                return None
            t = dq.args[0]
        elif calls_op(xq, aten.constant_pad_nd.default):
            pad = xq
            value = pad.args[2] if len(pad.args) > 2 else pad.kwargs.get("value", 0)
            if value != zp_x:
                return None
            t = pad.args[0]
        else:
            return None
        pads = list(pad.args[1])
        if len(pads) != 4 or min(pads) < 0:
            return None
        val = getattr(t, "meta", {}).get("val")
        if val is None or val.dtype != torch.int8:
            return None
        left, right, top, bottom = (int(p) for p in pads)
        return t, [top, left, bottom, right]

    @staticmethod
    def _on_int8(quant: torch.fx.Node) -> str | None:
        """``quantize(constant_pad_nd(dequantize(t), pads, 0))`` or
        ``quantize(max_pool2d_with_indices(dequantize(t), ...)[0])`` with
        ``t``'s parameters: zero padding and max pooling commute with the
        (increasing) affine map, so they run on ``t`` itself, as int8 (padding
        with the zero point). Exact: the result is the same int8 values."""
        op = quant.args[0]
        pool = None
        if calls_op(op, aten.cat.default):
            return FuseQuantizedOpsPass._cat_on_int8(quant, op)
        if (getattr(op, "target", None) is operator.getitem and op.args[1] == 0
                and calls_op(op.args[0], aten.max_pool2d_with_indices.default)):
            pool = op.args[0]
            dq = pool.args[0]
        elif calls_op(op, aten.constant_pad_nd.default):
            value = op.args[2] if len(op.args) > 2 else op.kwargs.get("value", 0)
            if value != 0:
                return None
            dq = op.args[0]
        else:
            return None
        if not calls_op(dq, _DQ) or tuple(dq.args[1:6]) != tuple(quant.args[1:6]):
            return None
        t = dq.args[0]
        if getattr(t, "meta", {}).get("val") is None or t.meta["val"].dtype != torch.int8:
            return None
        graph = quant.graph
        if pool is not None:
            with graph.inserting_before(quant):
                new_pool = graph.call_function(pool.target, (t, *pool.args[1:]),
                                               dict(pool.kwargs))
                new = graph.call_function(operator.getitem, (new_pool, 0))
            new_pool.meta = dict(pool.meta)
            new_pool.meta["val"] = (quant.meta["val"], pool.meta["val"][1])
            new.meta = dict(op.meta)
            new.meta["val"] = quant.meta["val"]
            kind = "int8 max pool"
        else:
            args = list(op.args)
            args[0] = t
            args[2:] = [int(dq.args[2])]  # pad with the zero point
            with graph.inserting_before(quant):
                new = graph.call_function(op.target, tuple(args), dict(op.kwargs))
            new.meta = dict(op.meta)
            new.meta["val"] = quant.meta["val"]
            kind = "int8 pad"
        quant.replace_all_uses_with(new)
        graph.erase_node(quant)
        return kind

    @staticmethod
    def _cat_on_int8(quant: torch.fx.Node, cat: torch.fx.Node) -> str | None:
        """``quantize(cat([dequantize(t_i), ...], dim))`` where every
        dequantize has the quantize's parameters (pt2e shares one observer
        over a cat's inputs and output): ``cat([t_i, ...], dim)`` on the int8
        tensors, exact."""
        srcs = []
        for dq in cat.args[0]:
            if not calls_op(dq, _DQ) or tuple(dq.args[1:6]) != tuple(quant.args[1:6]):
                return None
            t = dq.args[0]
            val = getattr(t, "meta", {}).get("val")
            if val is None or val.dtype != torch.int8:
                return None
            srcs.append(t)
        graph = quant.graph
        with graph.inserting_before(quant):
            new = graph.call_function(cat.target, (srcs, *cat.args[1:]), dict(cat.kwargs))
        new.meta = dict(cat.meta)
        new.meta["val"] = quant.meta["val"]
        quant.replace_all_uses_with(new)
        graph.erase_node(quant)
        return "int8 cat"

    _FUSED_OUTPUTS = ("conv2d", "linear", "add", "mul")

    def _fold_activation(self, quant: torch.fx.Node) -> str | None:
        """``quantize(relu|hardtanh(dequantize(t)))`` with the dequantize's
        parameters, where ``t`` comes from a fused op read by nothing else:
        the activation only narrows that op's output range (pt2e quantizes a
        relu6 after a convolution this way)."""
        x_float, scale_y, zp_y, qmin, qmax, _dtype = quant.args[:6]
        act = x_float
        if not (calls_op(act, aten.relu.default) or calls_op(act, aten.hardtanh.default)):
            return None
        dq = act.args[0]
        if not calls_op(dq, _DQ) or len(act.users) != 1 or len(dq.users) != 1:
            return None
        t, s_t, zp_t, t_min, t_max, t_dtype = dq.args[:6]
        if (s_t, zp_t, t_min, t_max, t_dtype) != (scale_y, zp_y, qmin, qmax, torch.int8):
            return None
        producer = getattr(getattr(t, "target", None), "op", None)
        if (not isinstance(t, torch.fx.Node) or len(t.users) != 1 or producer is None
                or producer.namespace != "ember_quantized"
                or producer._schema.name.split("::")[1] not in self._FUSED_OUTPUTS):
            return None
        rng = self._clamp_range(act, float(scale_y), int(zp_y), int(qmin), int(qmax))
        if rng is None:
            return None
        args = list(t.args)
        lo, hi = max(args[-2], rng[0]), min(args[-1], rng[1])
        if lo > hi:
            return None
        args[-2], args[-1] = lo, hi
        t.args = tuple(args)
        quant.replace_all_uses_with(t)
        graph = quant.graph
        for node in (quant, act, dq):
            graph.erase_node(node)
        return "activation"

    def _fuse_binary(self, graph: torch.fx.Graph, quant: torch.fx.Node, node: torch.fx.Node,
                     rng: tuple[int, int], fused: Any) -> str | None:
        """``quantize([relu](add|mul(dequantize(a), dequantize(b))))``, a and b
        broadcasting, → ``ember_quantized.add|mul``."""
        if len(node.args) != 2 or node.kwargs.get("alpha", 1) != 1:
            return None
        srcs = [self._int8_input(a) for a in node.args]
        if any(s is None for s in srcs):
            return None
        (a, s_a, z_a), (b, s_b, z_b) = srcs
        _, scale_y, zp_y = quant.args[:3]
        args = (a, s_a, z_a, b, s_b, z_b, float(scale_y), int(zp_y), rng[0], rng[1])
        self.replace_node(graph, quant, fused, args)
        return fused._schema.name.split("::")[1]

    def _linear_parts(self, inputs: LiftedConstants, node: torch.fx.Node):
        """(x, weight, float bias) of ``addmm(bias, x, permute(dequantize(w)))``
        or ``mm(x, permute(dequantize(w)))``."""
        if calls_op(node, aten.addmm.default):
            if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
                return None
            b, x, wt = node.args[:3]
        elif calls_op(node, aten.mm.default):
            b = None
            x, wt = node.args[:2]
        else:
            return None
        if not (calls_op(wt, aten.permute_copy.default) and list(wt.args[1]) == [1, 0]):
            return None
        weight = self._weight(inputs, wt.args[0], 2)
        ok, bias = self._bias(inputs, b)
        if weight is None or not ok:
            return None
        return x, weight, bias

    def _fuse_dynamic(self, inputs: LiftedConstants, mm: torch.fx.Node) -> str | None:
        parts = self._linear_parts(inputs, mm)
        if parts is None:
            return None
        x_dq, weight, bias = parts
        x_src = self._flattened_linear_input(x_dq)
        out_view = None
        if x_src is not x_dq:
            users = list(mm.users)
            if len(users) != 1 or not calls_op(users[0], aten.view_copy.default):
                return None
            out_view = users[0]
            x_dq = x_src
        if not calls_op(x_dq, _DQ_T):
            return None
        q, scale, zp, qmin, qmax, dtype = x_dq.args[:6]
        if not calls_op(q, _Q_T) or dtype != torch.int8 or (qmin, qmax) != (-128, 127):
            return None
        x, q_scale, q_zp = q.args[:3]
        if (q_scale, q_zp) != (scale, zp) or not all(
            getattr(n, "target", None) is operator.getitem for n in (scale, zp)
        ):
            return None
        choose = scale.args[0]
        if choose is not zp.args[0] or not calls_op(choose, _CHOOSE) or choose.args[0] is not x:
            return None
        _, c_min, c_max, eps, c_dtype = choose.args[:5]
        if (c_min, c_max, c_dtype) != (-128, 127, torch.int8):
            return None
        target = out_view if out_view is not None else mm
        args = (x,) + self._constants(inputs, weight, bias, "qlinear_dyn") + (
            -128, 127, float(eps))
        self.replace_node(inputs.gm.graph, target, ember_quantized.ops.linear_dynamic.default, args)
        return "linear_dynamic"

    @staticmethod
    def _constants(inputs: LiftedConstants, weight: _Weight, bias: torch.Tensor | None,
                   prefix: str) -> tuple[Any, ...]:
        w = inputs.add(weight.int8, f"{prefix}_weight")
        s = inputs.add(weight.scales, f"{prefix}_weight_scales")
        b = inputs.add(bias, f"{prefix}_bias") if bias is not None else None
        return (w, s, b)

    @staticmethod
    def replace_node(graph: torch.fx.Graph, old: torch.fx.Node, op: Any, args: tuple) -> None:
        """Puts a call of (the edge op of) ``op`` with ``args`` in ``old``'s place."""
        with graph.inserting_before(old):
            fused = graph.call_function(to_edge_op(op), args)
        fused.meta = dict(old.meta)
        old.replace_all_uses_with(fused)
        graph.erase_node(old)
