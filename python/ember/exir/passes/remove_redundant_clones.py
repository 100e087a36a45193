"""Contiguous clones of values that are already fresh contiguous tensors.

``x.permute(...).contiguous()`` exports as ``permute`` then ``clone``; the
edge program's ``permute_copy`` already writes a new contiguous tensor, so
the clone copies it once more. Transformers' attention reshapes do this three
times a layer, and Whisper's encoder once more after its feed-forward layer:
on Whisper-base 31 copies, 13 ms of its 550 ms at 1 thread.

A clone is removed when every one of these holds, so that nothing can observe
the missing copy:

- its memory format is contiguous or preserved (a channels-last clone changes
  the layout), and its input's value is contiguous;
- its input is computed by the graph (not a user input, parameter, buffer or
  constant, which the caller or a write-back may see or change) and is not a
  tuple element of an op that may alias its inputs;
- neither the clone nor its input is an output of the graph (two outputs
  would share memory).

``ExecutorchBackendConfig(remove_redundant_clones=False)`` keeps every clone.
"""

from __future__ import annotations

import torch
from torch.export import ExportedProgram

from ember.exir.dialects.edge._ops import calls_op
from ember.exir.exported import copy_graph_module, rebuild

_CLONE = torch.ops.aten.clone.default
_KEPT_FORMATS = (None, torch.preserve_format, torch.contiguous_format)


def _contiguous(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.is_contiguous()


class RemoveRedundantClonesPass:
    """``RemoveRedundantClonesPass()(ep)`` returns the program without its
    redundant clones (``ep`` is not changed); ``removed`` counts them in the
    last call."""

    def __init__(self) -> None:
        self.removed = 0

    def __call__(self, ep: ExportedProgram) -> ExportedProgram:
        self.removed = 0
        gm = copy_graph_module(ep.graph_module)
        outputs = set(gm.graph.output_node().all_input_nodes)
        for node in list(gm.graph.nodes):
            if not calls_op(node, _CLONE) or node in outputs:
                continue
            source = node.args[0]
            if not isinstance(source, torch.fx.Node) or source.op != "call_function":
                continue
            if source in outputs or not isinstance(source.target, type(node.target)):
                continue  # A getitem of a tuple, a delegate call: may alias.
            if node.kwargs.get("memory_format") not in _KEPT_FORMATS:
                continue
            if not _contiguous(source) or not _contiguous(node):
                continue
            node.replace_all_uses_with(source)
            gm.graph.erase_node(node)
            self.removed += 1
        if self.removed == 0:
            return ep
        gm.recompile()
        return rebuild(ep, gm, verifier=ep.verifiers[0])
