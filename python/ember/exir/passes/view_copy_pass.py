"""Replace view ops by their ``_copy`` variants (``permute`` -> ``permute_copy``)."""

from __future__ import annotations

from typing import Any

from torch._ops import OpOverload

from ember.exir.operator.view_copy import view_copy_of
from ember.exir.pass_base import ExportPass, NodeMetadata, ProxyValue


class ViewCopyPass(ExportPass):
    def call_operator(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue:
        if isinstance(op, OpOverload):
            op = view_copy_of(op) or op
        return super().call_operator(op, args, kwargs, meta)
