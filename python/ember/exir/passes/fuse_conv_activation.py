"""Fuse a convolution with the residual add and the activation after it.

``relu(convolution(x, w, b) + residual)`` — a ResNet block's tail, and with
either part missing most of a CNN — becomes one
``ember_fused::fused_convolution(x, w, b, ..., residual, min=0, max=None)``
(``ember.exir.operator.ember_fused``). Its kernel adds the residual and clamps
each output tile after the GEMM wrote it, while it is in cache: the add and
the relu no longer read and write the whole activation once each.

It applies only when the result is the same program:

- the convolution is not transposed, has 1 or 2 spatial dimensions and a
  float32 output, and its output is read by the next op alone;
- the add is ``aten.add.Tensor`` with alpha 1 whose other operand is a tensor
  of the output's shape and dtype (no broadcasting);
- the activation is ``relu``, ``relu6``-style ``hardtanh`` or ``clamp`` with
  number bounds, reading the convolution (or the add) alone.

Float addition commutes exactly, so ``residual + conv`` fuses too. Anything
else is left as it is; ``ExecutorchBackendConfig(fuse_conv_activation=False)``
keeps the aten ops (a program other runtimes of the format can run).
"""

from __future__ import annotations

import torch

from ember.exir.dialects.edge._ops import calls_op, to_edge_op
from ember.exir.operator import ember_fused
from ember.exir.passes.epilogue_fusion import (
    EpilogueFusionPass,
    clamp_bounds,
    only_user,
    residual_of,
    value_of,
)

_CONV = torch.ops.aten.convolution.default


class FuseConvActivationPass(EpilogueFusionPass):
    """``FuseConvActivationPass()(ep)`` returns the program with every
    fusable convolution [+ residual] [+ activation] fused; ``ep`` is not
    changed. ``fused`` counts the rewrites of the last call, ``with_residual``
    and ``with_activation`` the parts they took in."""

    def _takes(self, node: torch.fx.Node) -> bool:
        return calls_op(node, _CONV)

    def _fuse(self, graph: torch.fx.Graph, conv: torch.fx.Node) -> None:
        x, w, b, stride, padding, dilation, transposed, output_padding, groups = conv.args
        out = value_of(conv)
        if (transposed or any(output_padding) or out is None or out.dtype != torch.float32
                or out.dim() not in (3, 4)):
            return
        chain = [conv]  # The nodes the fused op replaces, in order.
        user = only_user(conv)
        residual = residual_of(user, conv)
        if residual is not None:
            chain.append(user)
        lo = hi = None
        act = only_user(chain[-1])
        bounds = clamp_bounds(act) if act is not None else None
        if bounds is not None and act.args[0] is chain[-1]:
            lo, hi = bounds
            chain.append(act)
        if len(chain) == 1:
            return
        last = chain[-1]
        args = (x, w, b, list(stride), list(padding), list(dilation), groups, residual, lo, hi)
        with graph.inserting_before(last):
            fused = graph.call_function(to_edge_op(ember_fused.ops.fused_convolution.default), args)
        # The convolution's source line and name (profiles and errors point at it).
        fused.meta = dict(conv.meta)
        fused.meta["val"] = last.meta["val"]
        self._replace(graph, chain, fused, residual, lo is not None or hi is not None)
