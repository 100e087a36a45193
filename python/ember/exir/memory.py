"""The ``alloc`` operator of the out-variant graph.

``alloc(((2, 2), torch.float32))`` stands for one planned tensor; a list of
such specs stands for a list of tensors (an op with a ``Tensor[] out``).
Called eagerly it returns empty tensors, so the graph still runs in Python.
"""

from __future__ import annotations

import torch

AllocSpec = tuple[tuple[int, ...], torch.dtype]


def alloc(spec: AllocSpec | list[AllocSpec]) -> torch.Tensor | list[torch.Tensor]:
    """Allocate the tensor(s) an out-variant op writes into."""
    if isinstance(spec, list):
        return [torch.empty(shape, dtype=dtype) for shape, dtype in spec]
    shape, dtype = spec
    return torch.empty(shape, dtype=dtype)
