"""Non-core ATen ops that Ember runs with a kernel of its own.

The edge dialect holds core ATen ops; these are the exceptions: ops export
leaves in mainstream models for which PyTorch has no decomposition, so Ember
has a portable kernel instead (``histc``: mixture-of-experts routing). The
edge verifier allows them and ``decompose_non_core`` keeps them.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten

EMBER_KERNEL_OPS = frozenset({
    aten.histc.default,
})
