"""Delegates of the program: each lowered module a method calls becomes one
BackendDelegate entry of that method's plan, and its processed blob one entry
of the program's delegate data. A module called twice is one entry, which
every DelegateCall of it shares (the runtime initialises it once). Blobs are
deduplicated by content, across modules and methods: two modules with the
same blob keep their own entries (a backend may keep per-delegate state)
but point at one copy of the bytes."""

from __future__ import annotations

from typing import Any

import torch

from ember.exir.delegate import is_lowered_module


class DelegateBlobs:
    """The program's delegate blobs, deduplicated by content."""

    def __init__(self) -> None:
        self.blobs: list[bytes] = []
        self._index: dict[bytes, int] = {}

    def add(self, data: bytes) -> int:
        if data not in self._index:
            self.blobs.append(data)
            self._index[data] = len(self.blobs) - 1
        return self._index[data]


class DelegateTable:
    """The ``delegates`` of one ExecutionPlan."""

    def __init__(self, blobs: DelegateBlobs) -> None:
        self.blobs = blobs
        self.entries: list[dict[str, Any]] = []
        self._index: dict[torch.nn.Module, int] = {}

    def index(self, gm: torch.fx.GraphModule, node: torch.fx.Node) -> int:
        """The delegate index of the lowered module ``node`` (a get_attr) names."""
        module = gm.get_submodule(node.target)
        if not is_lowered_module(module):
            raise NotImplementedError(
                f"cannot emit get_attr {node.name} of a {type(module).__name__}: only lowered "
                "backend modules may be referenced from the graph"
            )
        specs = [(s.key, bytes(s.value)) for s in module.compile_specs]
        if module not in self._index:
            self.entries.append(
                {
                    "id": module.backend_id,
                    "processed": {
                        "location": "INLINE",
                        "index": self.blobs.add(module.processed_bytes),
                    },
                    "compile_specs": [{"key": k, "value": list(v)} for k, v in specs],
                }
            )
            self._index[module] = len(self.entries) - 1
        return self._index[module]
