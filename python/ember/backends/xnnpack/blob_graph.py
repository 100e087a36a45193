"""``BlobGraph``: the XNNPACK subgraph preprocess builds (values, constants,
nodes, external inputs and outputs), serialised by the C++ writer into the
"EXN1" blob (backends/xnnpack/schema/xnnpack_graph.fbs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ember import _C

NO_VALUE = 0xFFFFFFFF


def nhwc(shape: tuple[int, ...]) -> list[int]:
    """NHWC dims of a rank-4 program shape (other ranks unchanged)."""
    shape = [int(d) for d in shape]
    return [shape[0], shape[2], shape[3], shape[1]] if len(shape) == 4 else shape


@dataclass
class BlobNode:
    kind: str
    inputs: list[int]
    outputs: list[int]
    params: dict[str, Any] = field(default_factory=dict)
    source: torch.fx.Node | None = None


class BlobGraph:
    """Values (dims, constant index), constants, nodes, and the externals as
    (value, nchw) pairs; ``of`` maps program values to XNNPACK values and
    ``known`` holds the program values known ahead of time, as tensors."""

    def __init__(self) -> None:
        self.values: list[tuple[list[int], int]] = []
        self.constants: list[torch.Tensor] = []
        self.nodes: list[BlobNode] = []
        self.inputs: list[tuple[int, bool]] = []
        self.outputs: list[tuple[int, bool]] = []
        self.of: dict[torch.fx.Node, int] = {}
        self.known: dict[torch.fx.Node, Any] = {}
        self.producer: dict[int, BlobNode] = {}

    def value(self, dims: list[int]) -> int:
        self.values.append((list(dims), -1))
        return len(self.values) - 1

    def constant(self, tensor: torch.Tensor) -> int:
        t = tensor.detach().to(torch.float32).contiguous()
        dims = list(t.shape) if t.dim() > 0 else [1]
        self.constants.append(t.reshape(dims))
        self.values.append((dims, len(self.constants) - 1))
        return len(self.values) - 1

    def add(self, kind: str, inputs: list[int], out: int, source: torch.fx.Node,
            **params: Any) -> BlobNode:
        node = BlobNode(kind, inputs, [out], params, source)
        self.nodes.append(node)
        self.producer[out] = node
        return node

    def serialize(self) -> bytes:
        constants = [t.detach().contiguous().numpy().tobytes() for t in self.constants]
        nodes = [
            {"kind": n.kind, "inputs": n.inputs, "outputs": n.outputs, **n.params}
            for n in self.nodes
        ]
        return _C.write_xnnpack_graph(self.values, constants, nodes, self.inputs, self.outputs)
