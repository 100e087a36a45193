"""Fold inference batch norm into the convolution before it.

``_native_batch_norm_legit_no_training(convolution(x, w, b, ...), gamma,
beta, mean, var, momentum, eps)`` computes, per output channel c,
``(conv(x)[c] - mean[c]) * s[c] + beta[c]`` with ``s = gamma / sqrt(var +
eps)``: the same as one convolution with weight ``w[c] * s[c]`` and bias
``(b[c] - mean[c]) * s[c] + beta[c]``. The pass rewrites that pair into the
one convolution, with the new weight and bias computed here (in float64,
then rounded to the weight's dtype) and stored as lifted constants, so the
runtime runs one kernel and reads the activations once instead of twice.

It applies only when the result is the same program: the convolution is not
transposed, its output is read by the batch norm alone, the weight, running
statistics and (when present) bias, gamma and beta are constants (never
mutated), and only the batch norm's first output is used. Anything else is
left as it is. Delegated convolutions are already inside their blobs when
this runs (``to_executorch``), so it serves Ember's own kernels.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op
from ember.exir.exported import copy_graph_module
from ember.exir.lifted_constants import LiftedConstants

_CONV = torch.ops.aten.convolution.default
_BATCH_NORM = torch.ops.aten._native_batch_norm_legit_no_training.default



class FoldBatchNormPass:
    """``FoldBatchNormPass()(ep)`` returns the program with every foldable
    (convolution, batch norm) pair fused; ``ep`` is not changed.
    ``folded`` counts the pairs of the last call."""

    def __init__(self) -> None:
        self.folded = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        inputs = LiftedConstants(ep, copy_graph_module(ep.graph_module))
        self.folded = 0
        for bn in list(inputs.gm.graph.nodes):
            if calls_op(bn, _BATCH_NORM) and self._fold(inputs, bn):
                self.folded += 1
        if self.folded == 0:
            return ep
        inputs.remove_unused()
        return inputs.program()

    @staticmethod
    def _constant(inputs: LiftedConstants, arg: Any) -> torch.Tensor | None:
        return inputs.value(arg) if isinstance(arg, torch.fx.Node) else None

    def _fold(self, inputs: LiftedConstants, bn: torch.fx.Node) -> bool:
        graph = inputs.gm.graph
        conv, gamma, beta, mean, var, _momentum, eps = bn.args
        if not calls_op(conv, _CONV) or len(conv.users) != 1:
            return False
        x, w, b, stride, padding, dilation, transposed, output_padding, groups = conv.args
        if transposed:
            return False
        # Only the normalised output may be read (the saved statistics of
        # the no-training variant are empty, but a program could read them).
        getitems = list(bn.users)
        if not all(u.target is operator.getitem for u in getitems):
            return False
        if any(u.args[1] != 0 and u.users for u in getitems):
            return False
        outputs = [u for u in getitems if u.args[1] == 0]
        if not outputs:
            return False  # Nothing reads it: not this pass's business.
        weight = self._constant(inputs, w)
        stats = [self._constant(inputs, t) for t in (mean, var)]
        optional = {"b": b, "gamma": gamma, "beta": beta}
        values = {k: self._constant(inputs, v) for k, v in optional.items()}
        if weight is None or any(s is None for s in stats) or not weight.is_floating_point():
            return False
        if any(optional[k] is not None and values[k] is None for k in optional):
            return False  # present but not a constant (a user input, a mutated buffer)
        channels = weight.shape[0]
        per_channel = [stats[0], stats[1]] + [v for v in values.values() if v is not None]
        if any(t.shape != (channels,) for t in per_channel):
            return False
        with torch.no_grad():
            scale = torch.rsqrt(stats[1].double() + float(eps))
            if values["gamma"] is not None:
                scale = scale * values["gamma"].double()
            shift = -stats[0].double() * scale
            if values["b"] is not None:
                shift = shift + values["b"].double() * scale
            if values["beta"] is not None:
                shift = shift + values["beta"].double()
            new_weight = weight.double() * scale.reshape((-1,) + (1,) * (weight.dim() - 1))
            new_weight = new_weight.to(weight.dtype).detach().contiguous()
            new_bias = shift.to(weight.dtype).detach().contiguous()
        w_node = inputs.add(new_weight, "bn_folded_weight")
        b_node = inputs.add(new_bias, "bn_folded_bias")
        with graph.inserting_before(bn):
            fused = graph.call_function(
                conv.target,
                (x, w_node, b_node, stride, padding, dilation, transposed, output_padding, groups),
            )
        fused.meta = dict(conv.meta)
        fused.meta["val"] = outputs[0].meta["val"]
        for out in outputs:
            out.replace_all_uses_with(fused)
        for u in getitems:
            graph.erase_node(u)
        graph.erase_node(bn)
        graph.erase_node(conv)
        return True
