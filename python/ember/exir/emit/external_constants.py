"""Constants kept outside the program: named-data files (``.ptd``).

With ``ExecutorchBackendConfig(external_constants=...)`` a constant tensor is
written in the ``.pte`` as EXTERNAL (its fully qualified name, no data) and
its bytes go into the named-data file of its tag (``<tag>.ptd``). One name
holds one tensor: a parameter read by two methods is stored once; a name
reused for other data (a folded constant of another method) gets the method
as a prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ember.exir.emit.constants import tensor_bytes
from ember.exir.emit.enums import SCALAR_TYPES

DEFAULT_TAG = "_default_external_constant"


def external_tag(setting: bool | Callable[[Any], str | None], node: torch.fx.Node) -> str | None:
    """The data file a constant placeholder goes to, or None (inside the .pte)."""
    if setting is True:
        return DEFAULT_TAG
    if setting is False or setting is None:
        return None
    tag = setting(node)
    if tag is not None and (not isinstance(tag, str) or not tag or "/" in tag):
        raise ValueError(
            f"external_constants({node.name}) returned {tag!r}: a file name without '/' "
            "(or None) is expected"
        )
    return tag


class ExternalConstants:
    """Tensors by tag and name, in their stored layout."""

    def __init__(self) -> None:
        self.files: dict[str, dict[str, tuple[torch.Tensor, list[int]]]] = {}

    def add(self, tag: str, name: str, method: str, stored: torch.Tensor,
            dim_order: list[int]) -> str:
        """Store ``stored`` (contiguous, in ``dim_order`` layout) as ``name`` in
        ``tag``'s file; returns the name the program refers to it by."""
        entries = self.files.setdefault(tag, {})
        for key in (name, f"{method}.{name}"):
            if key not in entries:
                entries[key] = (stored, dim_order)
                return key
            other, order = entries[key]
            if order == dim_order and other.dtype == stored.dtype and \
                    other.shape == stored.shape and tensor_bytes(other) == tensor_bytes(stored):
                return key
        raise ValueError(f"constant '{name}' of method '{method}' has two different values")

    def file_entries(self, tag: str) -> list[tuple[str, int, list[int], list[int], bytes]]:
        """(name, scalar type code, sizes, dim order, bytes) of each tensor of a file."""
        out = []
        for key, (stored, order) in self.files[tag].items():
            # ``stored`` is the tensor permuted into memory order; its sizes in
            # dim order ``order`` are the logical ones.
            sizes = [0] * len(order)
            for i, d in enumerate(order):
                sizes[d] = int(stored.shape[i])
            out.append((key, SCALAR_TYPES[stored.dtype][1], sizes, order, tensor_bytes(stored)))
        return out
