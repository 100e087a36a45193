"""The tutorial's demo partitioner: ``mm`` and ``add`` go to
``BackendWithCompilerDemo``.

All of them get one tag; ``to_backend`` splits that tag wherever one fused
subgraph would depend on itself through an untagged node, so the tutorial's
``Foo`` (mm, add, sub, mm, add) gives two delegate calls, each mm + add.
"""

from __future__ import annotations

import torch
from torch.export import ExportedProgram

from ember.exir.backend.compile_spec_schema import CompileSpec
from ember.exir.backend.partitioner import (
    DELEGATION_TAG,
    DelegationSpec,
    Partitioner,
    PartitionResult,
)
from ember.exir.backend.test.backend_with_compiler_demo import BackendWithCompilerDemo
from ember.exir.dialects.edge._ops import EdgeOpOverload

_SUPPORTED = (torch.ops.aten.mm.default, torch.ops.aten.add.Tensor)


class AddMulPartitionerDemo(Partitioner):
    def __init__(self) -> None:
        self.delegation_spec = DelegationSpec(
            BackendWithCompilerDemo.__name__, [CompileSpec("max_value", bytes([4]))]
        )

    def partition(self, exported_program: ExportedProgram) -> PartitionResult:
        tag = "tag0"
        for node in exported_program.graph_module.graph.nodes:
            target = node.target.op if isinstance(node.target, EdgeOpOverload) else node.target
            if node.op == "call_function" and target in _SUPPORTED:
                val = node.meta.get("val")
                if isinstance(val, torch.Tensor) and val.dtype == torch.float32:
                    node.meta[DELEGATION_TAG] = tag
        return PartitionResult(exported_program, {tag: self.delegation_spec})
