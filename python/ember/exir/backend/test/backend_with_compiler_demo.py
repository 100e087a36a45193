"""The tutorial's demo backend, ahead-of-time half: ``preprocess`` compiles an
edge subgraph of ``sin``, ``add``, ``sub``, ``mul`` and ``mm`` (float32) into
the "EDM1" blob of ``backends/demo/README.md``, which the C++ backend of the
same id (``backends/demo/demo_backend.cpp``) runs.

Every tensor the subgraph touches gets a slot: the inputs first (in
placeholder order), then each op's result. Parameters and constants are not
supported: the blob has no room for data, so the partitioner passes them in
as delegate inputs instead (which ``to_backend`` with a partitioner does).
"""

from __future__ import annotations

import struct
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from ember.exir.backend.backend_details import BackendDetails, PreprocessResult
from ember.exir.backend.compile_spec_schema import CompileSpec
from ember.exir.dialects.edge._ops import EdgeOpOverload

MAGIC = b"EDM1"
VERSION = 1
FLOAT32 = 6
MAX_RANK = 16
UNUSED = 0xFFFFFFFF

SIN, ADD, SUB, MUL, MM = 1, 2, 3, 4, 5
_OPCODES = {
    torch.ops.aten.sin.default: SIN,
    torch.ops.aten.add.Tensor: ADD,
    torch.ops.aten.sub.Tensor: SUB,
    torch.ops.aten.mul.Tensor: MUL,
    torch.ops.aten.mm.default: MM,
}


class DemoBackendError(RuntimeError):
    pass


def _aten(target: Any) -> Any:
    return target.op if isinstance(target, EdgeOpOverload) else target


class _Blob:
    def __init__(self) -> None:
        self.slots: list[bytes] = []
        self.slot_of: dict[torch.fx.Node, int] = {}
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.program: list[bytes] = []

    def add_slot(self, node: torch.fx.Node) -> int:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise DemoBackendError(
                f"BackendWithCompilerDemo: {node.name} is not a tensor ({type(val).__name__})"
            )
        if val.dtype != torch.float32:
            raise DemoBackendError(
                f"BackendWithCompilerDemo runs float32 only: {node.name} ({node.target}) "
                f"has dtype {val.dtype}"
            )
        if val.dim() > MAX_RANK or any(not isinstance(s, int) for s in val.shape):
            raise DemoBackendError(
                f"BackendWithCompilerDemo: {node.name} has shape {tuple(val.shape)} "
                f"(static, rank <= {MAX_RANK} only)"
            )
        sizes = [int(s) for s in val.shape]
        self.slots.append(struct.pack(f"<BBH{len(sizes)}i", FLOAT32, len(sizes), 0, *sizes))
        self.slot_of[node] = len(self.slots) - 1
        return self.slot_of[node]

    def operand(self, node: torch.fx.Node, value: Any) -> int:
        if not isinstance(value, torch.fx.Node) or value not in self.slot_of:
            raise DemoBackendError(
                f"BackendWithCompilerDemo: {node.name} ({_aten(node.target)}) takes "
                f"{value!r}, not a tensor of the subgraph"
            )
        return self.slot_of[value]

    def instruction(self, node: torch.fx.Node) -> None:
        op = _aten(node.target)
        opcode = _OPCODES.get(op) if node.op == "call_function" else None
        if opcode is None:
            supported = ", ".join(str(o) for o in _OPCODES)
            raise DemoBackendError(
                f"BackendWithCompilerDemo cannot lower operator {op} (node {node.name}); "
                f"it supports {supported}"
            )
        a = self.operand(node, node.args[0])
        b = UNUSED if opcode == SIN else self.operand(node, node.args[1])
        alpha = 1.0
        if opcode in (ADD, SUB):
            alpha = node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1)
            if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
                raise DemoBackendError(
                    f"BackendWithCompilerDemo: {node.name} has alpha {alpha!r}, not a number"
                )
        out = self.add_slot(node)
        self.program.append(struct.pack("<B3xIIIf", opcode, a, b, out, float(alpha)))

    def serialize(self) -> bytes:
        header = struct.pack(
            "<4sIIIII",
            MAGIC,
            VERSION,
            len(self.slots),
            len(self.inputs),
            len(self.outputs),
            len(self.program),
        )
        slots = [*self.inputs, *self.outputs]
        indices = struct.pack(f"<{len(slots)}I", *slots)
        return header + b"".join(self.slots) + indices + b"".join(self.program)


class BackendWithCompilerDemo(BackendDetails):
    @staticmethod
    def preprocess(
        edge_program: ExportedProgram, compile_specs: list[CompileSpec]
    ) -> PreprocessResult:
        kinds = {
            s.arg.name: s.kind for s in edge_program.graph_signature.input_specs
            if hasattr(s.arg, "name")
        }
        blob = _Blob()
        for node in edge_program.graph.nodes:
            if node.op == "placeholder":
                if kinds.get(node.name) != InputKind.USER_INPUT:
                    raise DemoBackendError(
                        f"BackendWithCompilerDemo cannot hold {node.name} "
                        f"({kinds.get(node.name).name}): the blob has no constant data; "
                        "pass it as an input instead"
                    )
                blob.inputs.append(blob.add_slot(node))
            elif node.op == "output":
                for value in torch.utils._pytree.tree_leaves(node.args[0]):
                    slot = blob.operand(node, value)
                    if slot in blob.inputs or slot in blob.outputs:
                        raise DemoBackendError(
                            f"BackendWithCompilerDemo: output {value} is an input or is "
                            "returned twice; the blob needs each output computed once"
                        )
                    blob.outputs.append(slot)
            else:
                blob.instruction(node)
        return PreprocessResult(processed_bytes=blob.serialize())
