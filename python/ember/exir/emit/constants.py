"""The program's constant tensors: contiguous little-endian bytes, deduplicated."""

from __future__ import annotations

import hashlib

import torch


def tensor_bytes(t: torch.Tensor) -> memoryview:
    """The tensor's bytes, contiguous, as a read-only view of its memory (no
    copy unless it was not contiguous): the writer streams them to the file,
    so a program's weights are never held twice. Hashable and comparable with
    bytes by content."""
    flat = t.detach().cpu().contiguous().reshape(-1)
    if flat.numel() == 0:
        return memoryview(b"")
    data = flat.view(torch.uint8)
    if t.dtype == torch.bool:
        # A bool constant can hold any byte (torch.empty folded into a
        # constant); the runtime accepts only 0/1, so write the value PyTorch
        # reads (non-zero is true).
        data = (data != 0).to(torch.uint8)
    # The array keeps `data` (and so its storage) alive as long as the view.
    return memoryview(data.numpy()).toreadonly()


class ConstantBuffers:
    """Blobs of constant data; tensors refer to them by ``1 + position``."""

    def __init__(self) -> None:
        self.blobs: list[memoryview] = []
        # (length, BLAKE2b of the bytes) -> index: a view of a NumPy array
        # cannot be a dict key itself (its exporter is unhashable).
        self._index: dict[tuple[int, bytes], int] = {}

    def add(self, t: torch.Tensor) -> int:
        """The data_buffer_idx of ``t``'s bytes (entry 0 is reserved)."""
        data = tensor_bytes(t)
        key = (len(data), hashlib.blake2b(data, digest_size=16).digest())
        index = self._index.get(key)
        if index is not None and self.blobs[index - 1] == data:
            return index
        self.blobs.append(data)
        if index is None:
            self._index[key] = len(self.blobs)
        return len(self.blobs)
