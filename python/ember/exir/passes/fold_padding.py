"""Fold zero padding into the convolution that reads it.

Models ported from TensorFlow (``transformers``' MobileNetV2 with
``tf_padding``, EfficientNet) pad explicitly before every convolution:
``convolution(constant_pad_nd(x, pad, 0), w, b, stride, padding, ...)``.
When the padding is zero-valued, touches only the spatial dims and is the
same on both sides of each, it is the convolution's own zero padding:
the pair becomes ``convolution(x, ..., padding + pad, ...)`` and the copy of
the padded activations disappears. A pad of all zeros (which TF-style
models emit for 1×1 convolutions) is dropped the same way.

Left as it is: a pad with other readers, a non-zero value, negative pads
(crops), padding of the batch or channel dims, different amounts on the
two sides of a dim (TF's stride-2 "same" padding on even sizes), and
transposed convolutions.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op
from ember.exir.exported import copy_graph_module, rebuild
from ember.exir.verification.edge_verifier import EdgeDialectVerifier

_CONV = torch.ops.aten.convolution.default
_PAD = torch.ops.aten.constant_pad_nd.default



def _spatial_pads(pad: list[Any], dims: int) -> list[int] | None:
    """The symmetric per-spatial-dim amounts of ``pad`` (last dim first, as
    constant_pad_nd takes it) for an input of ``dims`` dims, outermost
    spatial dim first; None when it is not foldable."""
    if not all(isinstance(p, int) for p in pad) or len(pad) % 2 or len(pad) > 2 * dims:
        return None
    spatial = dims - 2
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]  # last dim first
    pairs += [(0, 0)] * (dims - len(pairs))
    if any(p != (0, 0) for p in pairs[spatial:]):
        return None  # pads the channel or batch dim
    if any(lo != hi or lo < 0 for lo, hi in pairs[:spatial]):
        return None
    return [lo for lo, _ in reversed(pairs[:spatial])]


class FoldPaddingPass:
    """``FoldPaddingPass()(ep)`` returns the program with every foldable
    (constant_pad_nd, convolution) pair fused; ``ep`` is not changed.
    ``folded`` counts the pairs of the last call."""

    def __init__(self) -> None:
        self.folded = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        gm = copy_graph_module(ep.graph_module)
        self.folded = 0
        for pad in list(gm.graph.nodes):
            if calls_op(pad, _PAD) and self._fold(gm.graph, pad):
                self.folded += 1
        if self.folded == 0:
            return ep
        gm.graph.eliminate_dead_code()
        gm.recompile()
        return rebuild(ep, gm, verifier=EdgeDialectVerifier)

    @staticmethod
    def _fold(graph: torch.fx.Graph, pad: torch.fx.Node) -> bool:
        users = list(pad.users)
        if len(users) != 1 or not calls_op(users[0], _CONV):
            return False
        conv = users[0]
        x, w, b, stride, padding, dilation, transposed, output_padding, groups = conv.args
        if conv.args[0] is not pad or transposed or any(a is pad for a in conv.args[1:]):
            return False
        source = pad.args[0]
        amounts = pad.args[1]
        value = pad.args[2] if len(pad.args) > 2 else pad.kwargs.get("value", 0)
        if value != 0 or not isinstance(source, torch.fx.Node):
            return False
        val = source.meta.get("val")
        if not isinstance(val, torch.Tensor):
            return False
        extra = _spatial_pads(list(amounts), val.dim())
        if extra is None or not isinstance(padding, (list, tuple)):
            return False
        if not all(isinstance(p, int) for p in padding):
            return False
        spatial = val.dim() - 2
        current = list(padding) if len(padding) == spatial else list(padding) * spatial
        if len(current) != spatial:
            return False
        new_padding = [p + e for p, e in zip(current, extra, strict=True)]
        conv.args = (source, w, b, stride, new_padding, dilation, transposed, output_padding,
                     groups)
        graph.erase_node(pad)
        return True
