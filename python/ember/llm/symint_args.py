"""Tensor-and-SymInt arithmetic made tensor-and-tensor before `to_edge`.

A dynamic prefill length makes transformers' mask code add the token count
(a SymInt from `sym_size`) to a 0-d tensor: `aten.add_.Tensor(t, s)`, the
cache layers' `cumulative_length += n`. Ember's
`add.out` takes a tensor `other`, and a SymInt is known only at run time, so
it cannot become a constant; `scalar_tensor(s)` computes it in the program.
(The general fix belongs in ember.exir's lowering; this keeps the LLM recipe
independent of it.)
"""

from __future__ import annotations

import torch
from torch.export import ExportedProgram

_BINARY = {
    torch.ops.aten.add.Tensor, torch.ops.aten.sub.Tensor, torch.ops.aten.mul.Tensor,
    torch.ops.aten.add_.Tensor, torch.ops.aten.sub_.Tensor, torch.ops.aten.mul_.Tensor,
}


def _is_symint(arg: object) -> bool:
    return isinstance(arg, torch.fx.Node) and isinstance(arg.meta.get("val"), torch.SymInt)


def symint_operands_to_tensors(ep: ExportedProgram) -> int:
    """Rewrites `ep`'s graph in place; returns how many operands it wrapped."""
    graph = ep.graph_module.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _BINARY:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        args = list(node.args)
        for i, arg in enumerate(args[:2]):
            if not _is_symint(arg):
                continue
            with graph.inserting_before(node):
                wrapped = graph.call_function(torch.ops.aten.scalar_tensor.default, (arg,),
                                              {"dtype": torch.int64})
            wrapped.meta["val"] = torch.empty((), dtype=torch.int64)
            args[i] = wrapped
            count += 1
        node.args = tuple(args)
    if count:
        ep.graph_module.recompile()
    return count
