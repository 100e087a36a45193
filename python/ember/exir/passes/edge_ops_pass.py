"""Move every operator into the edge namespace (``ops.edge.aten.*``)."""

from __future__ import annotations

from typing import Any

from torch._ops import OpOverload

from ember.exir.dialects.edge._ops import to_edge_op
from ember.exir.pass_base import ExportPass, NodeMetadata, ProxyValue


class EdgeOpsPass(ExportPass):
    def call_operator(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue:
        if isinstance(op, OpOverload):
            op = to_edge_op(op)
        return super().call_operator(op, args, kwargs, meta)
